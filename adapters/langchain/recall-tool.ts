// The recall tool for LangChain agents: the way back to what compaction took out of the thread's
// state. Placeholders, truncation markers and summaries name what they replaced; the model passes
// that id, or words of what it needs, and gets the archived original as the tool's answer.
import { tool } from '@langchain/core/tools';
import type { ContextGuard } from '../../src/index.ts';
import { guardOf } from '../shared/compact-reply.ts';
import { RECALL_TOOL_DESCRIPTION, recallInputSchema, recallReply } from '../shared/recall-reply.ts';
import { resolveSessionId } from '../shared/session-id.ts';
import { threadIdOf } from './model-info.ts';

export interface RecallToolOptions {
  /** The tool's name. Default `recall_context`. */
  name?: string;
  /**
   * Most characters of archived text one answer returns, all items together. Default: the guard's
   * `archive.recallMaxChars`, at most about a tenth of the session's window.
   */
  maxChars?: number;
  /**
   * The session of every run (the createAgent middleware's fixed `sessionId`). Default: the run's `thread_id`, a string
   * or a number.
   */
  sessionId?: string;
}

/**
 * A LangChain tool (`{ query?, id?, limit?, offset? }`) that finds what compaction archived from the current
 * thread. Pass the middleware (or its guard): `tools: [recallTool(middleware), ...]`.
 */
export function recallTool(target: ContextGuard | { guard: ContextGuard }, options: RecallToolOptions = {}) {
  const guard = guardOf(target);
  return tool(
    async (input, config) => {
      const sessionId = resolveSessionId({ option: options.sessionId, hostId: threadIdOf(config) });
      if (!sessionId) return 'Recall is not available here: this run has no thread_id.';
      return recallReply(guard, sessionId, input, options.maxChars);
    },
    {
      name: options.name ?? 'recall_context',
      description: RECALL_TOOL_DESCRIPTION,
      schema: recallInputSchema,
    },
  );
}
