// A secret in the latest request on the overflow path: the provider rejected the call as too long,
// recoverFromOverflow asked for a compaction, and the request (too large for the window on its own)
// was sent cut while everything else left the prompt as the smallest prompt's digest. The next
// request makes it an old message that the same path digests. Nothing stored (state, archive,
// receipts) and no event may hold the secret: the digest is built from redacted messages, as the
// summarizer's transcript is, not redacted after its lines were flattened (a YAML `key:` on its own
// line becomes a mid-line `key: value` that no longer reads as a secret assignment).
import { describe, expect, it } from 'vitest';
import { createContextGuard, type ContextGuardEvent, type GuardMessage } from '../../src/index.ts';
import { assistant, system, user } from '../helpers.ts';

const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';

/** Whether `value` holds the secret anywhere (maps, sets and nested objects walked). */
function holdsSecret(value: unknown, seen = new Set<unknown>()): boolean {
  if (typeof value === 'string') return value.includes(SECRET);
  if (!value || typeof value !== 'object' || seen.has(value)) return false;
  seen.add(value);
  if (value instanceof Map) return [...value].some((e) => holdsSecret(e, seen));
  if (value instanceof Set) return [...value].some((e) => holdsSecret(e, seen));
  return Object.values(value).some((v) => holdsSecret(v, seen));
}

const yamlRequest = (filler: number) =>
  user(
    `Deploy with this config:\naws:\n  aws_secret_access_key: ${SECRET}\n  region: eu-west-1\n${'y'.repeat(filler)}`,
  );

describe('an AWS secret key in the latest request on the overflow path', () => {
  for (const summarizer of [async () => 'Summary of the work.', undefined]) {
    it(`never reaches the store, the archive, the receipts or the events (${summarizer ? 'summarizer' : 'no summarizer'})`, async () => {
      const stored: unknown[] = [];
      const data = new Map<string, never>();
      const store = {
        get: async (key: string) => data.get(key),
        set: async (key: string, value: never) => {
          stored.push(structuredClone(value));
          data.set(key, value);
        },
        delete: async (key: string) => {
          data.delete(key);
        },
      };
      const events: ContextGuardEvent[] = [];
      const guard = createContextGuard({
        contextWindow: 32_000,
        store,
        onEvent: (e) => events.push(e),
        ...(summarizer ? { summarizer } : {}),
      });
      const messages: GuardMessage[] = [system('You are a deploy agent.'), user('Set up the pipeline.')];
      messages.push(assistant('Done.'), yamlRequest(200_000));
      await guard.beforeModel({ sessionId: 's', messages });
      const error = new Error(
        "This model's maximum context length is 32000 tokens. However, your messages resulted in 52000 tokens.",
      );
      expect((await guard.recoverFromOverflow({ sessionId: 's', error })).retry).toBe(true);
      const retried = await guard.beforeModel({ sessionId: 's', messages });
      expect(retried.compaction?.strategy).toBe('hard-fit');
      await guard.afterModel({ sessionId: 's', usage: { inputTokens: retried.tokens } });
      // The next request is as large: the secret's request is now an old message on the same path.
      const next = [...messages, assistant('Deployed.'), user(`Now the staging copy. ${'z'.repeat(200_000)}`)];
      const later = await guard.beforeModel({ sessionId: 's', messages: next });
      expect(later.compaction?.strategy).toBe('hard-fit');
      expect(later.compaction?.summary).toContain('[REDACTED');

      expect(holdsSecret(stored)).toBe(false);
      expect(holdsSecret([...data.values()])).toBe(false);
      expect(holdsSecret(events)).toBe(false);
      expect(holdsSecret(await guard.compactions('s'))).toBe(false);
      expect(holdsSecret(await guard.recall('s', { query: 'deploy config aws region' }))).toBe(false);
    });
  }
});
