// Two separate Node processes, each with its own guard on one Redis (same prefix), share one
// session. The parent is a stateless host (the AI SDK): it keeps the full history, sends all of it
// on every call, alternately to each process, and reports a real token count after each call. The
// issue's acceptance: one summarizer call per compaction in total, identical compacted prefixes in
// both processes, no lost calibration update; and when both see the same over-threshold history
// at the same moment, one compaction runs and both send the same messages.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../../adapters/redis/index.ts';
import type {
  BeforeModelResult,
  CompactionReceipt,
  CompactionResult,
  GuardMessage,
  RecalledItem,
  SessionState,
} from '../../../src/index.ts';
import { expectInvariants } from '../../compaction/invariants.ts';
import type { WorkerInit, WorkerStats } from './guard-worker.ts';
import { backends, type Backend } from './backends.ts';
import { skipRedisTests, uniquePrefix } from './server.ts';

const skip = skipRedisTests('test/adapters/redis/two-processes.test.ts');

const WINDOW = 8_000;
const WORKER = fileURLToPath(new URL('./guard-worker.ts', import.meta.url));

interface Before {
  messages: GuardMessage[];
  tokens: number;
  threshold: number;
  compaction: CompactionResult | null;
}

let nextRequestId = 1;

/** One worker process and its JSON-lines channel. */
class Worker {
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private stderr = '';
  private exited: string | undefined;
  readonly name: string;
  private readonly proc: ChildProcessWithoutNullStreams;

  constructor(name: string, proc: ChildProcessWithoutNullStreams) {
    this.name = name;
    this.proc = proc;
    proc.stderr.on('data', (d) => (this.stderr += String(d)));
    createInterface({ input: proc.stdout }).on('line', (line) => {
      let reply: { id: number; ok: boolean; value?: unknown; error?: string };
      try {
        reply = JSON.parse(line);
      } catch {
        this.stderr += `[stdout] ${line}\n`;
        return;
      }
      const waiter = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (reply.ok) waiter?.resolve(reply.value);
      else waiter?.reject(new Error(`${this.name}: ${reply.error}`));
    });
    proc.on('exit', (code, signal) => {
      this.exited = `${this.name} exited (code ${code}, signal ${signal})\n${this.stderr}`;
      for (const waiter of this.pending.values()) waiter.reject(new Error(this.exited));
      this.pending.clear();
    });
  }

  static start(name: string): Worker {
    return new Worker(
      name,
      spawn(process.execPath, [WORKER], {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, NODE_NO_WARNINGS: '1' },
      }),
    );
  }

  /** Sends a request; resolves with its id and the worker's answer. */
  request<T>(op: string, args: Record<string, unknown> = {}): { id: number; reply: Promise<T> } {
    const id = nextRequestId++;
    const reply = new Promise<T>((resolve, reject) => {
      if (this.exited) return reject(new Error(this.exited));
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.proc.stdin.write(`${JSON.stringify({ id, op, ...args })}\n`);
    });
    return { id, reply };
  }

  call<T>(op: string, args: Record<string, unknown> = {}): Promise<T> {
    return this.request<T>(op, args).reply;
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    await this.call('exit').catch(() => {});
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 2_000);
    await gone;
    clearTimeout(timer);
  }
}

// ------------------------------------------------------------------------------------------------
// The conversation: deterministic, with tool steps, growing ~2,500 characters per call.
// ------------------------------------------------------------------------------------------------

const FILLER = 'The build log shows the step finished; the next file needs the same change applied carefully. ';
const text = (label: string, chars: number) =>
  `${label}: ${FILLER.repeat(Math.ceil(chars / FILLER.length))}`.slice(0, chars).trimEnd();

/** The turn appended before call `i`: the model's previous answer (maybe a tool step), then the user's next request. */
function turn(i: number, tag: string): GuardMessage[] {
  const out: GuardMessage[] = [];
  if (i % 3 === 1) {
    const id = `${tag}-call-${i}`;
    out.push(
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: id, toolName: 'read_file', input: { path: `src/file-${i}.ts` } }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: id,
            toolName: 'read_file',
            output: { type: 'text', value: text(`contents of file-${i}`, 1_400) },
          },
        ],
      },
    );
  }
  out.push({
    role: 'assistant',
    content: [{ type: 'text', text: text(`${tag} answer ${i}`, 700 + ((i * 137) % 600)) }],
  });
  out.push({ role: 'user', content: text(`${tag} request ${i + 1}`, 500 + ((i * 71) % 400)) });
  return out;
}

const start = (tag: string): GuardMessage[] => [
  { role: 'system', content: 'You are a careful coding agent. Follow the user through the numbered steps.' },
  { role: 'user', content: `${tag} request 0: start the migration of the repository, one file at a time.` },
];

/** The provider's count: what it was sent, in JSON, at chars/4 (a constant-ish overhead over the guard's heuristic). */
const realCount = (messages: readonly GuardMessage[]) => Math.ceil(JSON.stringify(messages).length / 4) + 40;

const json = (value: unknown) => JSON.stringify(value);

describe.skipIf(skip).each(backends)('two processes on $name', (backend) => {
  let env: Awaited<ReturnType<Backend['start']>>;
  let a: Worker;
  let b: Worker;
  let reader: RedisStore;
  const prefix = uniquePrefix('two-proc');

  const stats = async () => [await a.call<WorkerStats>('stats'), await b.call<WorkerStats>('stats')] as const;
  const compactionsOf = (s: readonly WorkerStats[]) => s.flatMap((w) => w.compactions);
  const summarizerCallsOf = (s: readonly WorkerStats[]) => s.reduce((n, w) => n + w.summarizerCalls, 0);

  beforeAll(async () => {
    env = await backend.start();
    a = Worker.start('process A');
    b = Worker.start('process B');
    // A shallow target: the suite is about sharing compactions, so it wants many of them.
    const init: WorkerInit = {
      connection: env.connection as WorkerInit['connection'],
      prefix,
      contextWindow: WINDOW,
      summarizerDelayMs: 100,
      target: 0.5,
    };
    const [pa, pb] = await Promise.all([
      a.call<{ pid: number }>('init', { init }),
      b.call<{ pid: number }>('init', { init }),
    ]);
    expect(pa.pid).not.toBe(pb.pid);
    reader = new RedisStore({ ...env.connection, prefix });
  }, 30_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await reader?.close();
    if (env) await env.clear(prefix);
    await env?.close();
  });

  it('drives one session alternately through both: one summarizer call per compaction, identical prefixes, no lost update', async () => {
    const session = 'alternating';
    let history = start('alt');
    let beforeCalls = 0;
    let afterCalls = 0;
    let comparisons = 0;
    let previous: Before | undefined;
    /** History length of every request id sent to beforeModel. */
    const historyOf = new Map<number, number>();

    const before = async (worker: Worker, messages: GuardMessage[]) => {
      const snapshot = structuredClone(messages);
      const { id, reply } = worker.request<Before>('before', { sessionId: session, messages });
      const r = await reply;
      beforeCalls++;
      historyOf.set(id, messages.length);
      expectInvariants(messages, r as unknown as BeforeModelResult, { snapshot });
      expect(r.tokens).toBeLessThanOrEqual(r.threshold);
      return r;
    };

    for (let i = 0; i < 40; i++) {
      history = [...history, ...turn(i, 'alt')];
      const [primary, other] = i % 2 === 0 ? [a, b] : [b, a];
      const r = await before(primary, history);

      // Byte-stable prefix across processes: without a new compaction, what was sent last time
      // (by the other process) is exactly the start of what is sent now.
      if (previous && !r.compaction)
        expect(json(r.messages.slice(0, previous.messages.length))).toBe(json(previous.messages));

      // The same history through the other process gives the same messages, without compacting
      // again: right after a compaction (before its real count arrives) and now and then.
      const compare = async () => {
        const o = await before(other, history);
        comparisons++;
        expect(o.compaction, `call ${i}: the other process compacted the same history again`).toBeNull();
        expect(json(o.messages)).toBe(json(r.messages));
      };
      if (r.compaction) await compare();

      await primary.call('after', {
        sessionId: session,
        usage: {
          inputTokens: realCount(r.messages),
          outputTokens: Math.ceil(text('x', 700 + (((i + 1) * 137) % 600)).length / 4),
        },
      });
      afterCalls++;
      if (r.compaction || i % 7 === 3) await compare();
      previous = r;
    }

    const s = await stats();
    const compactions = compactionsOf(s).filter((c) => c.sessionId === session);
    // Past the threshold several times, and the summarizer did the work (not pruning alone).
    expect(compactions.length).toBeGreaterThanOrEqual(3);
    expect(compactions.some((c) => c.summarizerCalls > 0)).toBe(true);
    // Both processes compacted (the session really moved between them).
    expect(new Set(s.flatMap((w) => w.compactions.filter((c) => c.sessionId === session).map(() => w.pid))).size).toBe(
      2,
    );
    // One summarizer call per compaction chunk in total: no process summarized what the other did.
    expect(summarizerCallsOf(s)).toBe(compactions.reduce((n, c) => n + c.summarizerCalls, 0));
    // No compaction repeated for the same history.
    const histories = compactions.map((c) => historyOf.get(c.requestId));
    expect(histories.every((h) => h !== undefined)).toBe(true);
    expect(new Set(histories).size).toBe(histories.length);
    expect(comparisons).toBeGreaterThanOrEqual(compactions.length);

    // No lost calibration update, no lost call: the shared state counted every one of them.
    const stored = (await reader.get(session)) as SessionState;
    expect(stored.usageRecorded).toBe(afterCalls);
    expect(stored.calls).toBe(beforeCalls);
    expect(s[0].usageRecorded + s[1].usageRecorded).toBe(afterCalls);
    expect(stored.memo?.summary).toBeDefined();
    expect(s.flatMap((w) => w.problems)).toEqual([]);
  });

  /** Both processes get `history` at the same moment: one compaction, same messages. */
  async function concurrently(session: string, history: GuardMessage[]) {
    const before = await stats();
    const [ra, rb] = await Promise.all([
      a.call<Before>('before', { sessionId: session, messages: history }),
      b.call<Before>('before', { sessionId: session, messages: history }),
    ]);
    const after = await stats();
    const newCompactions = compactionsOf(after).filter(
      (c) => !compactionsOf(before).some((o) => o.requestId === c.requestId),
    );
    expect(newCompactions).toHaveLength(1);
    expect([ra.compaction, rb.compaction].filter(Boolean)).toHaveLength(1);
    const compaction = newCompactions[0] as WorkerStats['compactions'][number];
    expect(compaction.summarizerCalls).toBeGreaterThanOrEqual(1);
    expect(summarizerCallsOf(after) - summarizerCallsOf(before)).toBe(compaction.summarizerCalls);
    expect(json(ra.messages)).toBe(json(rb.messages));
    for (const r of [ra, rb]) expectInvariants(history, r as unknown as BeforeModelResult);
    expect(after.flatMap((w) => w.problems)).toEqual([]);
    return { ra, rb };
  }

  it('runs one compaction when both see the same over-threshold history at once (a session both know)', async () => {
    const session = 'alternating';
    // The alternating session's stored summary covers an earlier history; this one extends it.
    let history = start('alt');
    for (let i = 0; i < 40; i++) history = [...history, ...turn(i, 'alt')];
    for (let i = 40; i < 52; i++) history = [...history, ...turn(i, 'alt')];
    const { ra } = await concurrently(session, history);
    // Later calls with this history re-apply that compaction in either process.
    const again = await Promise.all([
      a.call<Before>('before', { sessionId: session, messages: history }),
      b.call<Before>('before', { sessionId: session, messages: history }),
    ]);
    for (const r of again) {
      expect(r.compaction).toBeNull();
      expect(json(r.messages)).toBe(json(ra.messages));
    }
  });

  it('runs one compaction when both see the same over-threshold history at once (a new session)', async () => {
    const session = 'fresh';
    let history = start('fresh');
    for (let i = 0; i < 30; i++) history = [...history, ...turn(i, 'fresh')];
    const { ra } = await concurrently(session, history);
    const again = await Promise.all([
      a.call<Before>('before', { sessionId: session, messages: history }),
      b.call<Before>('before', { sessionId: session, messages: history }),
    ]);
    for (const r of again) {
      expect(r.compaction).toBeNull();
      expect(json(r.messages)).toBe(json(ra.messages));
    }
  });

  it('archives in one process what the other recalls: the same batch, by label, by tool-call id and by query', async () => {
    const session = 'archive-round-trip';
    let history = start('arc');
    let receiptsSeen = 0;
    for (let i = 0; i < 40 && receiptsSeen === 0; i++) {
      history = [...history, ...turn(i, 'arc')];
      const r = await a.call<Before>('before', { sessionId: session, messages: history });
      await a.call('after', { sessionId: session, usage: { inputTokens: realCount(r.messages) } });
      if (r.compaction) receiptsSeen++;
    }
    expect(receiptsSeen).toBe(1);
    // Process B never saw this session: it reads the receipt and the archive from Redis.
    const [receipt] = await b.call<CompactionReceipt[]>('compactions', { sessionId: session });
    expect(receipt?.archive.length).toBeGreaterThan(0);
    const label = receipt!.archive[0]!;
    const inA = await a.call<RecalledItem[]>('recall', { sessionId: session, options: { id: label, limit: 50 } });
    const inB = await b.call<RecalledItem[]>('recall', { sessionId: session, options: { id: label, limit: 50 } });
    expect(inB.length).toBeGreaterThan(0);
    expect(json(inB)).toBe(json(inA));
    expect(inB.every((item) => item.label === label && item.header.startsWith('[depth:0|start:'))).toBe(true);
    // A tool result the compaction replaced comes back whole, by its id, in the other process.
    const replacedTool = receipt!.replaced.find((m) => m.toolCallId !== undefined);
    expect(replacedTool).toBeDefined();
    {
      const [byId] = await b.call<RecalledItem[]>('recall', {
        sessionId: session,
        options: { id: replacedTool!.toolCallId, maxChars: 100_000 },
      });
      const original = history
        .flatMap((m) => (m.role === 'tool' ? m.content : []))
        .find((p) => p.type === 'tool-result' && p.toolCallId === replacedTool!.toolCallId);
      expect(byId?.text).toContain((original as { output: { value: string } }).output.value);
    }
    // And by query: the first request's words.
    const byQuery = await b.call<RecalledItem[]>('recall', { sessionId: session, options: { query: 'arc answer 0' } });
    expect(byQuery.some((item) => item.text.includes('arc answer 0'))).toBe(true);
  });
});
