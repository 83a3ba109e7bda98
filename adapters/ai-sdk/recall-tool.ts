// recallTool: the way back to what compaction took out of the prompt. Placeholders, truncation
// markers and summaries name what they replaced (`recall id "call_1"`, an archive batch label); the
// model passes that id, or words of what it needs, and gets the archived original as the tool result.
import { tool, type Tool } from 'ai';
import type { ContextGuard, GuardMessage } from '../../src/index.ts';
import { guardOf } from '../shared/compact-reply.ts';
import { RECALL_TOOL_DESCRIPTION, recallInputSchema, recallReply } from '../shared/recall-reply.ts';
import { deriveSessionId } from '../shared/session-id.ts';
import { sessionOfToolCall } from './sessions.ts';

export interface RecallToolOptions {
  /**
   * Most characters of archived text one answer returns, all items together. Default: the guard's
   * `archive.recallMaxChars`, at most about a tenth of the session's window.
   */
  maxChars?: number;
}

/**
 * An AI SDK tool (`{ query?, id?, limit?, offset? }`) that finds what compaction archived from the current
 * conversation. Pass the middleware (or its guard): `tools: { recall_context: recallTool(middleware) }`.
 */
export function recallTool(
  target: ContextGuard | { guard: ContextGuard },
  options: RecallToolOptions = {},
): Tool<
  {
    query?: string | undefined;
    id?: string | undefined;
    limit?: number | undefined;
    offset?: number | undefined;
  },
  string
> {
  const guard = guardOf(target);
  return tool({
    description: RECALL_TOOL_DESCRIPTION,
    inputSchema: recallInputSchema,
    // The session is the one the middleware saw this tool call made in, in this very conversation
    // (never by the call id alone: models reuse ids). Unknown to the middleware, the session is
    // derived from the messages. A derived session may be shared by conversations that start alike:
    // recall then returns only what this conversation's own messages hold.
    execute: (input, { toolCallId, messages }) => {
      const session = sessionOfToolCall(guard, toolCallId, messages) ?? {
        sessionId: deriveSessionId(messages),
        derived: true,
      };
      return recallReply(
        guard,
        session.sessionId,
        input,
        options.maxChars,
        session.derived ? (messages as readonly GuardMessage[]) : undefined,
      );
    },
  });
}
