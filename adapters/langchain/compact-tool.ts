// The compact tool for LangChain agents: the model asks for a compaction (before a new phase of
// work, say) with a focus for the summary; the next model call of the thread compacts.
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import type { ContextGuard } from '../../src/index.ts';

export interface CompactToolOptions {
  /** The tool's name. Default `compact_context`. */
  name?: string;
  /** Below this fraction of the window the tool answers that no compaction is needed. Default 0.2. */
  minFraction?: number;
  /** The session of a run without a `thread_id` (the createAgent middleware's `sessionId`). */
  sessionId?: string;
}

const percent = (f: number) => `${Math.round(f * 100)}%`;

/**
 * A LangChain tool (`{ focus?: string }`) that schedules a compaction of the current thread.
 * Pass the middleware (or its guard): `tools: [compactTool(middleware), ...]`.
 */
export function compactTool(target: ContextGuard | { guard: ContextGuard }, options: CompactToolOptions = {}) {
  // A middleware has hooks named like the guard's methods; what it carries is its `guard`.
  const guard: ContextGuard = 'guard' in target && target.guard ? target.guard : (target as ContextGuard);
  const minFraction = options.minFraction ?? 0.2;
  return tool(
    async ({ focus }, config) => {
      const threadId = (config as { configurable?: { thread_id?: unknown } } | undefined)?.configurable?.thread_id;
      const sessionId = options.sessionId ?? (typeof threadId === 'string' && threadId ? threadId : undefined);
      if (!sessionId) return 'Compaction is not available here: this run has no thread_id.';
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
    },
    {
      name: options.name ?? 'compact_context',
      description:
        'Compact the conversation: older messages are replaced by a structured summary to free room in the context window. ' +
        'Use it when the context is filling up or before starting a new phase of the task. `focus` says what the summary should keep in most detail.',
      schema: z.object({
        focus: z.string().optional().describe('What the summary should preserve in most detail, e.g. "the failing tests and their errors"'),
      }),
    },
  );
}
