// A separate Node process holding one guard on a shared RedisStore, driven by the parent test
// (two-processes.test.ts) over stdin/stdout, one JSON object per line:
//   request  { id, op: 'init' | 'before' | 'after' | 'recall' | 'compactions' | 'stats' | 'state' | 'exit', ...args }
//   response { id, ok: true, value } or { id, ok: false, error }
// Run with `node test/adapters/redis/guard-worker.ts` (Node strips the types). Not a test file itself.
import { createInterface } from 'node:readline';
import { RedisStore } from '../../../adapters/redis/index.ts';
import {
  createContextGuard,
  type ContextGuard,
  type ContextGuardEvent,
  type GuardMessage,
  type SummarizerInput,
} from '../../../src/index.ts';

export interface WorkerInit {
  /** Where the store connects: a URL, or a cluster's nodes. */
  connection: { url?: string; nodes?: Array<{ host: string; port: number }> };
  prefix: string;
  contextWindow: number;
  /** How long each summarizer call takes, so that concurrent calls really overlap. */
  summarizerDelayMs: number;
  storeTimeoutMs?: number;
  /** The guard's `target` (default: the guard's own). */
  target?: number;
}

/** What `stats` reports: everything the parent asserts on. */
export interface WorkerStats {
  pid: number;
  summarizerCalls: number;
  /** compaction-end events, each with the id of the request that ran it. */
  compactions: Array<{
    requestId: number;
    sessionId: string;
    summarizerCalls: number;
    messagesBefore: number;
    strategy: string;
    steps: string[];
  }>;
  /** error, store-failed and summarizer-failed events (none expected). */
  problems: Array<{ type: string; detail: string }>;
  usageRecorded: number;
}

let guard: ContextGuard | undefined;
let store: RedisStore | undefined;
const stats: WorkerStats = { pid: process.pid, summarizerCalls: 0, compactions: [], problems: [], usageRecorded: 0 };
/** The request being served (each process serves one call of a session at a time in these tests). */
let currentRequest = 0;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Deterministic: the same input gives the same summary in any process. */
function summaryOf(input: SummarizerInput): string {
  let hash = 0;
  for (const ch of input.prompt) hash = (hash * 31 + ch.charCodeAt(0)) | 0;
  const previous = input.previousSummary
    ? ` It updates a previous summary of ${input.previousSummary.length} characters.`
    : '';
  return `## Task state\nThe user is walking through numbered steps; ${input.messages.length} messages summarized (input ${(hash >>> 0).toString(16)}).${previous}\n## Next steps\nContinue with the next step.`;
}

function onEvent(event: ContextGuardEvent): void {
  if (event.type === 'compaction-end') {
    stats.compactions.push({
      requestId: currentRequest,
      sessionId: event.sessionId,
      summarizerCalls: event.summarizerCalls,
      messagesBefore: event.messagesBefore,
      strategy: event.strategy,
      steps: event.steps,
    });
  } else if (event.type === 'usage-recorded') {
    stats.usageRecorded++;
  } else if (event.type === 'error' || event.type === 'store-failed' || event.type === 'summarizer-failed') {
    const error = 'error' in event ? event.error : undefined;
    stats.problems.push({
      type: event.type,
      detail: `${JSON.stringify({ ...event, error: undefined })} ${error instanceof Error ? error.stack : String(error)}`,
    });
  }
}

async function handle(request: Record<string, unknown>): Promise<unknown> {
  switch (request.op) {
    case 'init': {
      const init = request.init as WorkerInit;
      store = new RedisStore({ ...init.connection, prefix: init.prefix });
      guard = createContextGuard({
        contextWindow: init.contextWindow,
        store,
        ...(init.storeTimeoutMs ? { storeTimeoutMs: init.storeTimeoutMs } : {}),
        ...(init.target ? { target: init.target } : {}),
        onEvent,
        summarizer: async (input) => {
          stats.summarizerCalls++;
          await sleep(init.summarizerDelayMs);
          return summaryOf(input);
        },
      });
      return { pid: process.pid };
    }
    case 'before': {
      if (!guard) throw new Error('init first');
      const r = await guard.beforeModel({
        sessionId: request.sessionId as string,
        messages: request.messages as GuardMessage[],
      });
      return { messages: r.messages, tokens: r.tokens, threshold: r.threshold, compaction: r.compaction ?? null };
    }
    case 'after': {
      if (!guard) throw new Error('init first');
      await guard.afterModel({
        sessionId: request.sessionId as string,
        usage: request.usage as { inputTokens: number },
      });
      return null;
    }
    case 'recall':
      if (!guard) throw new Error('init first');
      return await guard.recall(request.sessionId as string, request.options as Record<string, unknown>);
    case 'compactions':
      if (!guard) throw new Error('init first');
      return await guard.compactions(request.sessionId as string);
    case 'stats':
      return stats;
    case 'state':
      return (await store?.get(request.sessionId as string)) ?? null;
    case 'exit':
      await store?.close();
      setImmediate(() => process.exit(0));
      return null;
    default:
      throw new Error(`unknown op ${String(request.op)}`);
  }
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (!line.trim()) return;
  const request = JSON.parse(line) as Record<string, unknown> & { id: number };
  currentRequest = request.id;
  handle(request).then(
    (value) => process.stdout.write(`${JSON.stringify({ id: request.id, ok: true, value })}\n`),
    (error: unknown) =>
      process.stdout.write(
        `${JSON.stringify({ id: request.id, ok: false, error: error instanceof Error ? error.stack : String(error) })}\n`,
      ),
  );
});
// The parent went away: do not linger.
lines.on('close', () => {
  void store?.close().finally(() => process.exit(0));
});
