// What both adapters' compact tools do once they know the session: check that compacting is worth
// it, mark the session so that its next model call compacts with the focus, and tell the model what
// will happen (in words it can act on).
import type { ContextGuard } from '../../src/index.ts';

const percent = (f: number) => `${Math.round(f * 100)}%`;

/** The compact tool's description, shared by the adapters. */
export const COMPACT_TOOL_DESCRIPTION =
  'Compact the conversation: older messages are replaced by a structured summary to free room in the context window. ' +
  'Use it when the context is filling up or before starting a new phase of the task. `focus` says what the summary should keep in most detail.';

/** The description of the tool's `focus` input. */
export const COMPACT_FOCUS_DESCRIPTION =
  'What the summary should preserve in most detail, e.g. "the failing tests and their errors"';

/** The guard a compact tool was given: a guard, or an adapter (middleware) that carries one. */
export function guardOf(target: ContextGuard | { guard: ContextGuard }): ContextGuard {
  // A middleware has hooks named like the guard's methods; what it carries is its `guard`.
  return 'guard' in target && target.guard ? target.guard : (target as ContextGuard);
}

/** Schedules a compaction of the session (unless it is small) and returns the tool's answer. */
export async function requestCompaction(
  guard: ContextGuard,
  sessionId: string,
  focus: string | undefined,
  minFraction: number,
): Promise<string> {
  const status = await guard.status(sessionId);
  if (status && status.fraction < minFraction) {
    return `No compaction needed: the conversation uses ${percent(status.fraction)} of the context window (${status.tokens} tokens).`;
  }
  await guard.compact(sessionId, focus ? { focus } : {});
  return (
    `Compaction scheduled${status ? ` (the conversation uses ${percent(status.fraction)} of the context window)` : ''}. ` +
    `Before your next step, older messages are replaced by a summary${focus ? ` focused on ${JSON.stringify(focus)}` : ''}; ` +
    'the system prompt, the first request and the most recent messages are kept as they are. Continue with the task.'
  );
}
