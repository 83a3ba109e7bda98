// compactTool: lets the model ask for a compaction itself, say before a new phase of work, with a
// focus for the summary. The tool only marks the session; the next step's prompt is compacted by
// the middleware, with the rest of the conversation in view.
import { tool, type Tool } from 'ai';
import { z } from 'zod';
import type { ContextGuard } from '../../src/index.ts';
import { COMPACT_FOCUS_DESCRIPTION, COMPACT_TOOL_DESCRIPTION } from '../shared/compact-reply.ts';
import { guardOf, requestCompaction } from '../shared/compact-reply.ts';
import { deriveSessionId } from '../shared/session-id.ts';
import { sessionOfToolCall } from './sessions.ts';

export interface CompactToolOptions {
  /** Below this fraction of the window the tool answers that no compaction is needed. Default 0.2. */
  minFraction?: number;
}

/**
 * An AI SDK tool (`{ focus?: string }`) that schedules a compaction of the current conversation.
 * Pass the middleware (or its guard): `tools: { compact_context: compactTool(middleware) }`.
 */
export function compactTool(
  target: ContextGuard | { guard: ContextGuard },
  options: CompactToolOptions = {},
): Tool<{ focus?: string | undefined }, string> {
  const guard = guardOf(target);
  const minFraction = options.minFraction ?? 0.2;
  return tool({
    description: COMPACT_TOOL_DESCRIPTION,
    inputSchema: z.object({ focus: z.string().optional().describe(COMPACT_FOCUS_DESCRIPTION) }),
    // The session is the one the middleware saw this tool call made in, in this very conversation.
    execute: ({ focus }, { toolCallId, messages }) =>
      requestCompaction(
        guard,
        sessionOfToolCall(guard, toolCallId, messages)?.sessionId ?? deriveSessionId(messages),
        focus,
        minFraction,
      ),
  });
}
