// recall's `conversation` option: a session id that several conversations share (one derived from
// a common start) returns to each only what its own messages hold (issue 22).
import { describe, expect, it } from 'vitest';
import { createContextGuard, type GuardMessage } from '../../src/index.ts';
import { assistant, system, toolStep, user } from '../helpers.ts';

const pad = (label: string, chars: number) =>
  `${label}: ${'the module compiles and the next step applies the same change. '.repeat(Math.ceil(chars / 60))}`.slice(
    0,
    chars,
  );

function conversation(fact: string): GuardMessage[] {
  const out: GuardMessage[] = [system('You are a support agent.'), user('hi')];
  for (let i = 0; i < 6; i++) {
    const output = i === 1 ? `${pad('log', 1_500)}\n${fact}\n${pad('more', 1_500)}` : pad(`record ${i}`, 3_000);
    out.push(...toolStep(`call_${i}`, { path: `records/${i}` }, output));
    out.push(assistant(pad(`answer ${i}`, 400)), user(`Step ${i + 1}: go on.`));
  }
  return out;
}

describe('recall with the asking conversation', () => {
  it("returns only items archived from that conversation's own messages", async () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    const a = conversation('Alice payout ledger QUOKKA-77341');
    await guard.beforeModel({ sessionId: 'auto:shared', messages: a });
    // Without the option (the host knows the session is one conversation's): everything.
    expect((await guard.recall('auto:shared', { query: 'QUOKKA' }))[0]?.text).toContain('QUOKKA-77341');
    // A itself, asking with its messages: found, by query and by id.
    expect((await guard.recall('auto:shared', { query: 'QUOKKA', conversation: a }))[0]?.text).toContain(
      'QUOKKA-77341',
    );
    expect((await guard.recall('auto:shared', { id: 'call_1', conversation: a }))[0]?.text).toContain('QUOKKA-77341');
    // B opened alike (same session id), holds none of A's messages past the start: nothing.
    const b = [system('You are a support agent.'), user('hi'), ...toolStep('call_1', { path: 'x' }, 'other')];
    expect(await guard.recall('auto:shared', { query: 'QUOKKA', conversation: b })).toEqual([]);
    expect(await guard.recall('auto:shared', { id: 'call_1', conversation: b })).toEqual([]);
    expect(await guard.recall('auto:shared', { query: 'QUOKKA', conversation: [] })).toEqual([]);
    // A batch label names nothing of A's to B either.
    const label = (await guard.compactions('auto:shared'))[0]?.archive[0] as string;
    expect((await guard.recall('auto:shared', { id: label, conversation: a })).length).toBeGreaterThan(0);
    expect(await guard.recall('auto:shared', { id: label, conversation: b })).toEqual([]);
  });
});
