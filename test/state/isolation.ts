// Conversations for the isolation tests (memory store, Redis, the adapters): a session that
// compacts on its first call with a unique fact archived, and the session ids an attacker may pick
// to reach another session's records.
import { expect } from 'vitest';
import { createContextGuard, type ContextGuardOptions, type GuardMessage } from '../../src/index.ts';
import { assistant, system, toolStep, user } from '../helpers.ts';

const filler = (label: string, chars: number) =>
  `${label}: ${'the module compiles and the next step applies the same change. '.repeat(Math.ceil(chars / 60))}`.slice(
    0,
    chars,
  );

/** A session over an 8k window: one compaction on its first call, with `fact` in an archived tool output. */
export function conversation(fact: string): GuardMessage[] {
  const out: GuardMessage[] = [system('You are a coding agent.'), user('Migrate the ledger module.')];
  for (let i = 0; i < 6; i++) {
    const output = i === 1 ? `${filler('log', 1_500)}\n${fact}\n${filler('more', 1_500)}` : filler(`file ${i}`, 3_000);
    out.push(...toolStep(`call_${i}`, { path: `src/part_${i}.ts` }, output));
    out.push(assistant(filler(`answer ${i}`, 400)));
    out.push(user(`Step ${i + 1}: go on.`));
  }
  return out;
}

/** Session ids an attacker may pick to reach session `victim`'s records (its archive, its state, its caches). */
export const craftedIds = (victim: string) => [
  `\u001farchive\u001f${victim}`,
  `\u001fstate\u001f${victim}`,
  `\u001fstate\u001f\u001farchive\u001f${victim}`,
  `${victim}\u0000input`,
  `${victim}\u0000apart`,
  `\u0000input\u0000${victim}`,
  `\u0000prompt\u0000${victim}`,
  `${victim}}`,
  `{${victim}}`,
];

/**
 * Through a guard with `options` (its store): session `victim` compacts and archives a fact; every
 * crafted id then compacts, recalls, records a count and resets its own session. The victim's
 * receipts, archive and state are untouched, and no crafted session reads the fact.
 */
export async function expectIsolated(options: ContextGuardOptions, victim = 'victim'): Promise<void> {
  const guard = createContextGuard({ contextWindow: 8_000, ...options });
  const r = await guard.beforeModel({ sessionId: victim, messages: conversation('IBAN DE44 5001 0517 5407 3249 31') });
  expect(r.compaction).toBeDefined();
  const receipts = await guard.compactions(victim);
  expect(receipts).toHaveLength(1);
  for (const id of craftedIds(victim)) {
    // The attacker's own conversation compacts too (writes its state and archive).
    const own = await guard.beforeModel({ sessionId: id, messages: conversation('nothing to see') });
    expect(own.compaction, JSON.stringify(id)).toBeDefined();
    expect(JSON.stringify(await guard.recall(id, { query: 'IBAN DE44' }))).not.toContain('DE44');
    await guard.afterModel({ sessionId: id, usage: { inputTokens: 5_000 } });
    await guard.reset(id);
  }
  expect(await guard.compactions(victim)).toEqual(receipts);
  expect((await guard.recall(victim, { query: 'IBAN DE44' }))[0]?.text).toContain('DE44 5001');
  expect((await guard.status(victim))?.contextWindow).toBe(8_000);
}
