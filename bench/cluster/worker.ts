// One agent-server process of bench/cluster.ts: a guard on a RedisStore shared with the other
// processes, driven by the parent over IPC. Each request names a session and a turn; the history
// is rebuilt deterministically from them, so every process sees exactly the same messages for the
// same turn (a stateless host: the AI SDK sends the whole history on every call).
import { RedisStore, type RedisStoreOptions } from '../../adapters/redis/index.ts';
import { createContextGuard, type GuardMessage } from '../../src/index.ts';

export interface WorkerInit {
  store: RedisStoreOptions;
  contextWindow: number;
  summarizerDelayMs: number;
}

export type Request =
  | { id: number; op: 'init'; init: WorkerInit }
  | { id: number; op: 'call'; sessionId: string; turn: number }
  | { id: number; op: 'stats' }
  | { id: number; op: 'exit' };

export interface CallAnswer {
  /** beforeModel + afterModel, in milliseconds: what the guard adds to the call. */
  ms: number;
  compacted: boolean;
}

export interface WorkerStats {
  summarizerCalls: number;
  compactions: number;
  fenced: number;
  storeFailed: number;
  errors: string[];
}

const FILLER = 'The service restarted and the queue drained; the next batch of files needs the same edit. ';
const text = (label: string, chars: number) =>
  `${label}: ${FILLER.repeat(Math.ceil(chars / FILLER.length))}`.slice(0, chars).trimEnd();

/** The history of `sessionId` at `turn`: ~2,000 characters a turn, a tool step every third. */
export function historyAt(sessionId: string, turn: number): GuardMessage[] {
  const out: GuardMessage[] = [
    { role: 'system', content: 'You are an operations agent. Keep going until every batch is done.' },
    { role: 'user', content: `${sessionId} request 0: migrate every service to the new queue.` },
  ];
  for (let i = 0; i < turn; i++) {
    if (i % 3 === 2) {
      const id = `${sessionId}-call-${i}`;
      out.push(
        {
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: id, toolName: 'read_file', input: { path: `lib/${i}.ts` } }],
        },
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: id,
              toolName: 'read_file',
              output: { type: 'text', value: text(`lib/${i}.ts`, 1_200) },
            },
          ],
        },
      );
    }
    out.push({ role: 'assistant', content: [{ type: 'text', text: text(`answer ${i}`, 900) }] });
    out.push({ role: 'user', content: text(`request ${i + 1}`, 700) });
  }
  return out;
}

const stats: WorkerStats = { summarizerCalls: 0, compactions: 0, fenced: 0, storeFailed: 0, errors: [] };
let guard: ReturnType<typeof createContextGuard> | undefined;
let store: RedisStore | undefined;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function handle(request: Request): Promise<unknown> {
  switch (request.op) {
    case 'init': {
      const { init } = request;
      store = new RedisStore(init.store);
      guard = createContextGuard({
        contextWindow: init.contextWindow,
        store,
        summarizer: async ({ messages }) => {
          stats.summarizerCalls++;
          await sleep(init.summarizerDelayMs);
          return `## Task state\n${messages.length} messages summarized.\n## Next steps\nGo on.`;
        },
        onEvent: (event) => {
          if (event.type === 'compaction-end') stats.compactions++;
          else if (event.type === 'compaction-fenced') stats.fenced++;
          else if (event.type === 'store-failed') stats.storeFailed++;
          else if (event.type === 'error') stats.errors.push(String(event.error));
        },
      });
      return process.pid;
    }
    case 'call': {
      const messages = historyAt(request.sessionId, request.turn);
      const g = guard as NonNullable<typeof guard>;
      const t0 = performance.now();
      const r = await g.beforeModel({ sessionId: request.sessionId, messages });
      await g.afterModel({
        sessionId: request.sessionId,
        usage: { inputTokens: Math.ceil(JSON.stringify(r.messages).length / 4), outputTokens: 225 },
      });
      return { ms: performance.now() - t0, compacted: r.compaction !== undefined } satisfies CallAnswer;
    }
    case 'stats':
      return stats;
    case 'exit':
      await store?.close();
      setImmediate(() => process.exit(0));
      return null;
  }
}

process.on('message', (request: Request) => {
  handle(request).then(
    (value) => process.send?.({ id: request.id, ok: true, value }),
    (error: unknown) => process.send?.({ id: request.id, ok: false, error: String(error) }),
  );
});
