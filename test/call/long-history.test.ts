// A stateless host that resends its whole history on every call, one tool step more each time
// (issue 22, the replay CLI at 10,000+ calls): what the guard reads of the old messages on a call
// that does not compact stays bounded however long the history grows (the input check's slice,
// its head and boundary), after a compaction too, when the latest request lies thousands of
// messages back. Counted reads, not timings: finding the latest request scanned back to it on
// every call (10,000 calls of a one-request agent run took 14.5 s, 30,000 calls 68 s).
import { describe, expect, it } from 'vitest';
import { createContextGuard, type GuardMessage, redactSecrets } from '../../src/index.ts';
import { system, toolStep, user } from '../helpers.ts';

/** `m`, counting every property read of it into `reads` while `watching.on`. */
function watched(m: GuardMessage, reads: { n: number; on: boolean }): GuardMessage {
  return new Proxy(m, {
    get(target, key, receiver) {
      if (reads.on) reads.n++;
      return Reflect.get(target, key, receiver);
    },
  });
}

describe('a long one-request agent run through a stateless host', () => {
  it('reads a bounded number of old messages per call, before and after a compaction', async () => {
    const reads = { n: 0, on: false };
    const guard = createContextGuard({ contextWindow: 32_000 });
    const steps = (from: number, count: number): GuardMessage[] => {
      const out: GuardMessage[] = [];
      for (let i = from; i < from + count; i++)
        out.push(...toolStep(`call_${i}`, { path: `f${i}.ts` }, `export const v${i} = ${i};\n`.repeat(8)));
      return out;
    };
    // The old messages, watched: one request, then 3,000 tool steps.
    const old = [system('You are a coding agent.'), user('Migrate every file.'), ...steps(0, 3_000)].map((m) =>
      watched(m, reads),
    );
    const messages: GuardMessage[] = [...old];
    let compactions = 0;
    const perCall: number[] = [];
    for (let call = 0; call < 60; call++) {
      messages.push(...steps(10_000 + call, 1));
      reads.n = 0;
      reads.on = true;
      const r = await guard.beforeModel({ sessionId: 's', messages: [...messages] });
      reads.on = false;
      if (r.compaction) compactions++;
      else perCall.push(reads.n);
    }
    expect(compactions).toBeGreaterThan(0);
    expect(perCall.length).toBeGreaterThan(40);
    // The input check compares its slice of 64 old messages, the head and the boundary: a few fields
    // each. Scanning back to the request read the role of all 6,002.
    expect(Math.max(...perCall)).toBeLessThan(600);
  });

  it("redacts each file path of the summary's file list once, not again on every compaction", async () => {
    const redacted = new Map<string, number>();
    const guard = createContextGuard({
      contextWindow: 16_000,
      redact: (text) => {
        if (/^src\/f\d+\.ts$/.test(text)) redacted.set(text, (redacted.get(text) ?? 0) + 1);
        return redactSecrets(text);
      },
    });
    const messages: GuardMessage[] = [system('You are a coding agent.'), user('Migrate every file.')];
    let compactions = 0;
    for (let i = 0; i < 800; i++) {
      messages.push(...toolStep(`call_${i}`, { path: `src/f${i}.ts` }, `export const v${i} = ${i};\n`.repeat(8)));
      const r = await guard.beforeModel({ sessionId: 's', messages: [...messages] });
      if (r.compaction) compactions++;
    }
    expect(compactions).toBeGreaterThan(3);
    // Every file read is redacted by the compaction that summarizes its call: as the call's input,
    // and in the file list. Not again by the later compactions that carry the list on.
    expect(redacted.size).toBeGreaterThan(400);
    expect(Math.max(...redacted.values())).toBe(2);
  });
});
