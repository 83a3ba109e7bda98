// The shared store at scale: N agent-server processes × M sessions against a local Redis Cluster
// (three masters, three replicas). Each session is a stateless host's conversation (the whole
// history on every call) of T turns; each turn is sent to F processes at once (F = 2 by default:
// two processes see the same over-threshold history at the same moment, the case single flight is
// for). Measured: calls per second, the latency the guard adds per call (beforeModel + afterModel,
// compactions and lock waits included), compactions written (receipts in the store), summarizer
// calls per compaction (single flight across processes holds when it is exactly one).
//
//   node bench/cluster.ts                                   (2 processes, 100 sessions, 30 turns, fan-out 2)
//   node bench/cluster.ts --processes 4 --sessions 200
//   node bench/cluster.ts --wait-replicas 1                 (every write waits for a replica: Redis WAIT)
//
// The cluster: REDIS_CLUSTER_NODES when set (as `.ci/run` exports it), else six redis-server
// processes of its own on free loopback ports (stopped at the end).
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { RedisStore } from '../adapters/redis/index.ts';
import { createContextGuard } from '../src/index.ts';
import { startCluster } from '../test/adapters/redis/cluster.ts';
import { numberFlag } from './args.ts';
import type { CallAnswer, Request, WorkerInit, WorkerStats } from './cluster/worker.ts';

const args = process.argv.slice(2);
const PROCESSES = numberFlag(args, '--processes', 2);
const SESSIONS = numberFlag(args, '--sessions', 100);
const TURNS = numberFlag(args, '--turns', 30);
const FANOUT = Math.min(PROCESSES, numberFlag(args, '--fanout', 2));
const WAIT_REPLICAS = numberFlag(args, '--wait-replicas', 0);
const SUMMARIZER_DELAY_MS = numberFlag(args, '--summarizer-ms', 50);
const WINDOW = 8_000;

/** A request as the parent writes it (the id is added per worker). */
type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;

class Worker {
  private readonly child: ChildProcess;
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  constructor() {
    this.child = fork(fileURLToPath(new URL('./cluster/worker.ts', import.meta.url)), [], { stdio: 'inherit' });
    this.child.on('message', (m: { id: number; ok: boolean; value?: unknown; error?: string }) => {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.ok) w?.resolve(m.value);
      else w?.reject(new Error(m.error));
    });
  }
  call<T>(request: WithoutId<Request>): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ ...request, id });
    });
  }
  exited(): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null) return resolve();
      this.child.once('exit', () => resolve());
    });
  }
}

/** A small deterministic generator: the same run picks the same processes. */
function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;

const cluster = await startCluster();
const prefix = `cgbench:${process.pid}:${Date.now().toString(36)}:`;
const storeOptions = {
  nodes: cluster.nodes,
  prefix,
  ...(WAIT_REPLICAS > 0 ? { waitForReplicas: { replicas: WAIT_REPLICAS, timeoutMs: 100 } } : {}),
};
const workers = Array.from({ length: PROCESSES }, () => new Worker());
try {
  const init: WorkerInit = { store: storeOptions, contextWindow: WINDOW, summarizerDelayMs: SUMMARIZER_DELAY_MS };
  await Promise.all(workers.map((w) => w.call({ op: 'init', init })));
  // A warm-up session in every process (JIT, connections), not counted.
  for (let t = 1; t <= 3; t++)
    await Promise.all(workers.map((w, i) => w.call({ op: 'call', sessionId: `warm-${i}`, turn: t })));

  const latencies: number[] = [];
  const pick = random(42);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      const sessionId = `s-${s}`;
      for (let turn = 1; turn <= TURNS; turn++) {
        const chosen = new Set<number>();
        while (chosen.size < FANOUT) chosen.add(Math.floor(pick() * PROCESSES));
        const answers = await Promise.all(
          [...chosen].map((w) => (workers[w] as Worker).call<CallAnswer>({ op: 'call', sessionId, turn })),
        );
        for (const a of answers) latencies.push(a.ms);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1_000;
  const stats = await Promise.all(workers.map((w) => w.call<WorkerStats>({ op: 'stats' })));

  // Compactions written: the receipts in the store (the warm-up sessions left out).
  const reader = new RedisStore({ nodes: cluster.nodes, prefix });
  const readGuard = createContextGuard({ contextWindow: WINDOW, store: reader });
  let receipts = 0;
  for (let s = 0; s < SESSIONS; s++) receipts += (await readGuard.compactions(`s-${s}`)).length;
  await reader.close();

  const sum = (f: (w: WorkerStats) => number) => stats.reduce((n, w) => n + f(w), 0);
  const warmSummaries = 0; // the warm-up histories stay under the threshold (3 turns)
  const summarizerCalls = sum((w) => w.summarizerCalls) - warmSummaries;
  latencies.sort((a, b) => a - b);
  const row = {
    processes: PROCESSES,
    sessions: SESSIONS,
    turns: TURNS,
    fanout: FANOUT,
    waitReplicas: WAIT_REPLICAS,
    calls: latencies.length,
    callsPerSecond: Math.round(latencies.length / seconds),
    p50Ms: Number(percentile(latencies, 0.5).toFixed(2)),
    p99Ms: Number(percentile(latencies, 0.99).toFixed(1)),
    maxMs: Number((latencies.at(-1) ?? 0).toFixed(1)),
    compactions: receipts,
    summarizerCalls,
    summarizerCallsPerCompaction: receipts ? Number((summarizerCalls / receipts).toFixed(3)) : 0,
    fenced: sum((w) => w.fenced),
    storeFailed: sum((w) => w.storeFailed),
    errors: stats.flatMap((w) => w.errors).length,
  };
  if (args.includes('--json')) console.log(JSON.stringify(row));
  else {
    console.log(
      '| processes × sessions | turns | fan-out | WAIT | calls | calls/s | p50 ms | p99 ms | max ms | compactions | summarizer calls / compaction | fenced | store-failed | errors |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
    console.log(
      `| ${row.processes} × ${row.sessions} | ${row.turns} | ${row.fanout} | ${row.waitReplicas || 'off'} | ${row.calls} | ${row.callsPerSecond} | ${row.p50Ms} | ${row.p99Ms} | ${row.maxMs} | ${row.compactions} | ${row.summarizerCallsPerCompaction} (${row.summarizerCalls}) | ${row.fenced} | ${row.storeFailed} | ${row.errors} |`,
    );
  }
} finally {
  await Promise.all(workers.map((w) => w.call({ op: 'exit' }).catch(() => {})));
  await Promise.all(workers.map((w) => w.exited()));
  if (!process.env.REDIS_CLUSTER_NODES) await cluster.close();
  else {
    // A shared cluster: leave no keys behind.
    const raw = cluster.client();
    await Promise.all(
      raw.nodes('master').map(async (node) => {
        let cursor = '0';
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000);
          cursor = next;
          for (const key of keys) await raw.del(key);
        } while (cursor !== '0');
      }),
    );
    raw.disconnect();
  }
}
