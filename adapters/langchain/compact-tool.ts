// The compact tool for LangChain agents: the model asks for a compaction (before a new phase of
// work, say) with a focus for the summary; the next model call of the thread compacts.
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import type { ContextGuard } from '../../src/index.ts';
import { COMPACT_FOCUS_DESCRIPTION, COMPACT_TOOL_DESCRIPTION } from '../shared/compact-reply.ts';
import { guardOf, requestCompaction } from '../shared/compact-reply.ts';
import { resolveSessionId } from '../shared/session-id.ts';
import { threadIdOf } from './model-info.ts';

export interface CompactToolOptions {
  /** The tool's name. Default `compact_context`. */
  name?: string;
  /** Below this fraction of the window the tool answers that no compaction is needed. Default 0.2. */
  minFraction?: number;
  /**
   * The session of every run (the createAgent middleware's fixed `sessionId`). Default: the run's `thread_id`, a string
   * or a number.
   */
  sessionId?: string;
}

/**
 * A LangChain tool (`{ focus?: string }`) that schedules a compaction of the current thread.
 * Pass the middleware (or its guard): `tools: [compactTool(middleware), ...]`.
 */
export function compactTool(target: ContextGuard | { guard: ContextGuard }, options: CompactToolOptions = {}) {
  const guard = guardOf(target);
  const minFraction = options.minFraction ?? 0.2;
  return tool(
    async ({ focus }, config) => {
      const sessionId = resolveSessionId({ option: options.sessionId, hostId: threadIdOf(config) });
      if (!sessionId) return 'Compaction is not available here: this run has no thread_id.';
      return requestCompaction(guard, sessionId, focus, minFraction);
    },
    {
      name: options.name ?? 'compact_context',
      description: COMPACT_TOOL_DESCRIPTION,
      schema: z.object({ focus: z.string().optional().describe(COMPACT_FOCUS_DESCRIPTION) }),
    },
  );
}
