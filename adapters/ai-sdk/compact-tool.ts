// compactTool: lets the model ask for a compaction itself, say before a new phase of work, with a
// focus for the summary. The tool only marks the session; the next step's prompt is compacted by
// the middleware, with the rest of the conversation in view.
import { tool, type Tool } from 'ai';
import { z } from 'zod';
import type { ContextGuard } from '../../src/index.ts';
import { deriveSessionId } from './session-id.ts';
import { sessionOfToolCall } from './sessions.ts';

export interface CompactToolOptions {
  /** Below this fraction of the window the tool answers that no compaction is needed. Default 0.2. */
  minFraction?: number;
}

const percent = (f: number) => `${Math.round(f * 100)}%`;

/**
 * An AI SDK tool (`{ focus?: string }`) that schedules a compaction of the current conversation.
 * Pass the middleware (or its guard): `tools: { compact_context: compactTool(middleware) }`.
 */
export function compactTool(target: ContextGuard | { guard: ContextGuard }, options: CompactToolOptions = {}): Tool<{ focus?: string | undefined }, string> {
  // A middleware has hooks named like the guard's methods; what it carries is its `guard`.
  const guard: ContextGuard = 'guard' in target && target.guard ? target.guard : (target as ContextGuard);
  const minFraction = options.minFraction ?? 0.2;
  return tool({
    description:
      'Compact the conversation: older messages are replaced by a structured summary to free room in the context window. ' +
      'Use it when the context is filling up or before starting a new phase of the task. `focus` says what the summary should keep in most detail.',
    inputSchema: z.object({
      focus: z.string().optional().describe('What the summary should preserve in most detail, e.g. "the failing tests and their errors"'),
    }),
    execute: async ({ focus }, { toolCallId, messages }) => {
      const sessionId = sessionOfToolCall(guard, toolCallId) ?? deriveSessionId(messages);
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
  });
}
