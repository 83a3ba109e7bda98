// Property-based tests of the guard's call-time promises over random conversations and random
// (often malformed) usage reports: it never throws, never mutates its input, returns the messages
// unchanged (compaction and tool-pairing repair aside), and never estimates a grown prompt below the last real count.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { repairToolPairing } from '../src/compaction/structure.ts';
import { createContextGuard, type GuardMessage } from '../src/index.ts';
import { pairingProblems } from './compaction/invariants.ts';

const text = fc.string({ unit: 'grapheme', maxLength: 400 });
const id = fc.string({ minLength: 1, maxLength: 12 });

const message: fc.Arbitrary<GuardMessage> = fc.oneof(
  text.map((t): GuardMessage => ({ role: 'user', content: t })),
  text.map((t): GuardMessage => ({ role: 'system', content: t })),
  fc
    .array(
      fc.oneof(
        text.map((t) => ({ type: 'text' as const, text: t })),
        text.map((t) => ({ type: 'reasoning' as const, text: t })),
        fc.record({ type: fc.constant('tool-call' as const), toolCallId: id, toolName: id, input: fc.jsonValue() }),
      ),
      { maxLength: 4 },
    )
    .map((content): GuardMessage => ({ role: 'assistant', content })),
  fc
    .array(
      fc.record({
        type: fc.constant('tool-result' as const),
        toolCallId: id,
        toolName: id,
        output: fc.oneof(
          text.map((value) => ({ type: 'text' as const, value })),
          fc.jsonValue().map((value) => ({ type: 'json' as const, value })),
          text.map((value) => ({ type: 'error-text' as const, value })),
          fc.uint8Array({ maxLength: 64 }).map((bytes) => ({
            type: 'content' as const,
            value: [{ type: 'image-data', data: btoa(String.fromCharCode(...bytes)), mediaType: 'image/png' }],
          })),
        ),
      }),
      { minLength: 1, maxLength: 3 },
    )
    .map((content): GuardMessage => ({ role: 'tool', content })),
  fc
    .uint8Array({ maxLength: 256 })
    .map(
      (bytes): GuardMessage => ({ role: 'user', content: [{ type: 'image', image: bytes, mediaType: 'image/png' }] }),
    ),
);

const usage = fc.oneof(
  fc.record({
    inputTokens: fc.integer({ min: 1, max: 2_000_000 }),
    outputTokens: fc.option(fc.integer({ min: 0, max: 50_000 }), { nil: undefined }),
  }),
  fc.constantFrom(
    undefined,
    null,
    {},
    { inputTokens: Number.NaN },
    { inputTokens: -3 },
    { inputTokens: '12' },
    { inputTokens: Number.POSITIVE_INFINITY },
    { inputTokens: 5, outputTokens: -1 },
  ),
);

const step = fc.record({ added: fc.array(message, { maxLength: 4 }), edit: fc.boolean(), usage });

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    if (ArrayBuffer.isView(value)) return value; // typed arrays cannot be frozen
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

describe('guard properties', () => {
  it('never throws, never mutates, returns the messages, and never goes below a grown prompt’s last real count', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 12 }),
        fc.constantFrom('gpt-4o', 'claude-sonnet-4-5', 'deepseek-chat', 'unknown-model', undefined),
        fc.boolean(),
        async (steps, modelId, fixedWindow) => {
          const errors: unknown[] = [];
          let recorded = 0;
          const guard = createContextGuard({
            ...(fixedWindow ? { contextWindow: 128_000 } : {}),
            onEvent: (e) => {
              if (e.type === 'error') errors.push(e.error);
              if (e.type === 'usage-recorded') recorded++;
            },
          });
          let history: GuardMessage[] = [];
          let lastReal: number | undefined;
          let compacted = false;
          for (const s of steps) {
            const grewOnly = !(s.edit && history.length > 0);
            history = grewOnly ? [...history, ...s.added] : [...history.slice(1), ...s.added];
            if (!grewOnly) lastReal = undefined;
            const sent = deepFreeze(history.slice());
            const snapshot = structuredClone(sent);
            const r = await guard.beforeModel({ sessionId: 's', ...(modelId ? { modelId } : {}), messages: sent });
            // Unless it compacted, the guard sends the history as it is, tool pairing repaired.
            const valid = pairingProblems(snapshot).length === 0;
            compacted ||= r.compaction !== undefined;
            if (!compacted) expect(r.messages).toEqual(repairToolPairing(snapshot).messages);
            // A repaired or compacted prompt need not extend the one the last real count measured.
            if (!valid || r.compaction) lastReal = undefined;
            expect(sent).toEqual(snapshot);
            expect(Number.isFinite(r.tokens) && r.tokens >= 0).toBe(true);
            // A one-off jump (a host summing steps) floors the estimate at the threshold and no higher.
            if (lastReal !== undefined && history.length > 0 && !r.compaction)
              expect(r.tokens).toBeGreaterThanOrEqual(Math.min(lastReal, r.threshold));
            const before = recorded;
            await guard.afterModel({ sessionId: 's', usage: s.usage as never });
            const u = s.usage as { inputTokens?: unknown } | null | undefined;
            // Only a count the guard accepted anchors it (an implausible one is ignored with an event).
            if (recorded > before && valid && u && typeof u.inputTokens === 'number' && history.length > 0)
              lastReal = u.inputTokens;
          }
          expect(errors).toEqual([]);
        },
      ),
      { numRuns: 150 },
    );
  });
});
