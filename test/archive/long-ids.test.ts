// Session ids (and tool-call ids) of any length: wherever an id is quoted into the prompt (the
// archive batch label in the summary's footer, the items' recall ids, the placeholders of pruned
// outputs), a long one is shortened with a hash, so that a 60,000-character id compacts like a
// short one; recall still finds what was archived by the quoted form.
import { describe, expect, it } from 'vitest';
import { quotedId } from '../../src/compaction/quoted-id.ts';
import { createContextGuard, type GuardMessage } from '../../src/index.ts';
import { assistant, recorder, system, toolStep, user } from '../helpers.ts';

function conversation(): GuardMessage[] {
  const messages: GuardMessage[] = [system('You are a coding agent.')];
  for (let i = 0; i < 20; i++) {
    messages.push(user(`Step ${i}: look at module ${i}.`));
    messages.push(...toolStep(`call-${i}`, { path: `src/m${i}.ts` }, `module ${i} source `.repeat(200)));
    messages.push(assistant(`Module ${i} reviewed.`));
  }
  messages.push(user('Now write the release notes.'));
  return messages;
}

async function compactOnce(sessionId: string) {
  const ev = recorder();
  const guard = createContextGuard({
    contextWindow: 16_000,
    summarizer: async () => 'The agent reviewed the modules one by one; nothing failed.',
    onEvent: ev.onEvent,
  });
  const r = await guard.beforeModel({ sessionId, messages: conversation() });
  return { guard, r, ev };
}

describe('quotedId', () => {
  it('keeps a short id as it is and shortens a long one to a short, unique, stable form', () => {
    expect(quotedId('chat-42')).toBe('chat-42');
    const long = 'x'.repeat(60_000);
    const other = `${'x'.repeat(59_999)}y`;
    expect(quotedId(long).length).toBeLessThanOrEqual(64);
    expect(quotedId(long)).toBe(quotedId(long));
    expect(quotedId(long)).not.toBe(quotedId(other));
    expect(quotedId(long).startsWith('xxxx')).toBe(true);
    // An id with line breaks or quotes is never quoted raw.
    expect(quotedId('a\nb"c')).not.toMatch(/[\n"]/);
  });
});

describe('a 60,000-character session id', () => {
  it('compacts like a short one: the same strategy, the same size, a short batch label', async () => {
    const short = await compactOnce('chat-42');
    const longId = `user-${'9'.repeat(60_000)}`;
    const long = await compactOnce(longId);
    expect(short.r.compaction?.strategy).toBe('summary');
    expect(long.r.compaction?.strategy).toBe(short.r.compaction?.strategy);
    expect(Math.abs((long.r.compaction?.tokensAfter ?? 0) - (short.r.compaction?.tokensAfter ?? 0))).toBeLessThan(40);
    const label = long.ev.last('compaction-end').receipt.archive[0] as string;
    expect(label.length).toBeLessThan(120);
    expect(long.r.compaction?.summary).toContain(label);
    expect(JSON.stringify(long.r.messages)).not.toContain('9'.repeat(200));
    // Recall finds the batch by the label the summary quotes, and the items by their ids.
    const items = await long.guard.recall(longId, { id: label });
    expect(items.length).toBeGreaterThan(0);
    for (const item of items) expect(item.id.length).toBeLessThan(140);
  });

  it('a long tool-call id is quoted short in a placeholder and recalled by that form', async () => {
    const ev = recorder();
    const guard = createContextGuard({
      contextWindow: 16_000,
      prune: { maxToolResultTokens: 1_000 },
      onEvent: ev.onEvent,
    });
    const longCall = `call_${'a'.repeat(2_000)}`;
    const messages: GuardMessage[] = [system('You are a coding agent.'), user('Read the big file, then the others.')];
    messages.push(...toolStep(longCall, { path: 'big.ts' }, 'big file line\n'.repeat(3_000)));
    messages.push(assistant('Read them all.'), user('Summarize big.ts.'));
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction?.strategy).toBe('prune');
    const sent = JSON.stringify(r.messages);
    expect(sent).toContain(JSON.stringify(quotedId(longCall)).slice(1, -1));
    const back = await guard.recall('s', { id: quotedId(longCall) });
    expect(back[0]?.text).toContain('big file line');
  });
});
