// RedisStore on a real Redis Cluster (three masters, three replicas), what only a cluster has:
// where a session's keys land (one slot per session, sessions over every master), fenced
// compactions across processes (a holder that paused past its lease, a newer compaction, the late
// commit refused), and a master killed mid-run with its replica promoted. The suite shared with a
// single Redis (contract, contention, two processes compacting one session at once) runs on the
// cluster too: redis-store.test.ts, two-processes.test.ts.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../../adapters/redis/index.ts';
import { redisKey, type KeyKind } from '../../../adapters/redis/keys.ts';
import {
  createContextGuard,
  type ContextGuardOptions,
  type GuardMessage,
  type SessionState,
  type Summarizer,
} from '../../../src/index.ts';
import { expectInvariants } from '../../compaction/invariants.ts';
import { recorder } from '../../helpers.ts';
import { startCluster, type ClusterHandle } from './cluster.ts';
import { skipRedisTests, uniquePrefix } from './server.ts';

const skip = skipRedisTests('test/adapters/redis/cluster.test.ts');

const WINDOW = 8_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FILLER = 'The service restarted and the queue drained; the next batch of files needs the same edit. ';
const text = (label: string, chars: number) =>
  `${label}: ${FILLER.repeat(Math.ceil(chars / FILLER.length))}`.slice(0, chars).trimEnd();

const initial = (tag: string): GuardMessage[] => [
  { role: 'system', content: 'You are an operations agent. Keep going until every batch is done.' },
  { role: 'user', content: `${tag} request 0: migrate every service to the new queue.` },
];

/** A stateless host's history grown by one call's worth (~2,000 characters, a tool step every third call). */
function grow(history: GuardMessage[], i: number, tag: string): GuardMessage[] {
  const out = [...history];
  if (i % 3 === 2) {
    const id = `${tag}-call-${i}`;
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
  out.push({ role: 'assistant', content: [{ type: 'text', text: text(`${tag} answer ${i}`, 900) }] });
  out.push({ role: 'user', content: text(`${tag} request ${i + 1}`, 700) });
  return out;
}

const overThreshold = (tag: string) => {
  let history = initial(tag);
  for (let i = 0; i < 14; i++) history = grow(history, i, tag);
  return history;
};

const realCount = (messages: readonly GuardMessage[]) => Math.ceil(JSON.stringify(messages).length / 4);

const summaryBy =
  (name: string): Summarizer =>
  async ({ messages }) =>
    `## Task state\nSummary by ${name}: ${messages.length} messages.\n## Next steps\nGo on.`;

describe.skipIf(skip)('RedisStore on a Redis Cluster: slots and fencing', () => {
  let cluster: ClusterHandle;
  const prefix = uniquePrefix('cluster');
  const stores: RedisStore[] = [];
  const open = () => {
    const store = new RedisStore({ nodes: cluster.nodes, prefix });
    stores.push(store);
    return store;
  };
  const guardOn = (options: ContextGuardOptions) => {
    const events = recorder();
    const guard = createContextGuard({ contextWindow: WINDOW, store: open(), ...options, onEvent: events.onEvent });
    return { guard, events };
  };

  beforeAll(async () => {
    cluster = await startCluster();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await cluster?.close();
  });

  it('puts every key of a session in one slot, and spreads sessions over every master', async () => {
    const { guard } = guardOn({ summarizer: summaryBy('A') });
    // A session with every kind of key: state, archive (a compaction), lease and its counter.
    const r = await guard.beforeModel({ sessionId: 'placed', messages: overThreshold('placed') });
    expect(r.compaction).toBeDefined();
    const port = cluster.nodes[0]?.port as number;
    const kinds: KeyKind[] = ['state', 'archive', 'lock', 'fence'];
    const slots = await Promise.all(
      kinds.map((kind) => cluster.command(port, 'CLUSTER', 'KEYSLOT', redisKey(prefix, 'placed', kind))),
    );
    expect(new Set(slots).size).toBe(1);
    const raw = cluster.client();
    try {
      expect(await raw.exists(redisKey(prefix, 'placed', 'state'), redisKey(prefix, 'placed', 'archive'))).toBe(2);
      expect(Number(await raw.get(redisKey(prefix, 'placed', 'fence')))).toBeGreaterThan(0);
    } finally {
      raw.disconnect();
    }

    const store = open();
    const state: SessionState = { version: 1, calibration: {}, calls: 1, usageRecorded: 0 };
    const ids = Array.from({ length: 60 }, (_, i) => `spread-${i}`);
    await Promise.all(ids.map((id) => store.set(id, state)));
    const masters = new Map<number, number>();
    for (const id of ids) {
      const master = await cluster.masterOf(redisKey(prefix, id, 'state'));
      masters.set(master, (masters.get(master) ?? 0) + 1);
    }
    expect(masters.size).toBe(3);
    for (const count of masters.values()) expect(count).toBeGreaterThanOrEqual(5);
  });

  it('waitForReplicas: a write and a lease grant return once a replica has them', async () => {
    const store = new RedisStore({ nodes: cluster.nodes, prefix, waitForReplicas: { replicas: 1, timeoutMs: 2_000 } });
    stores.push(store);
    const state: SessionState = { version: 1, calibration: {}, calls: 3, usageRecorded: 0 };
    const master = await cluster.masterOf(redisKey(prefix, 'waited', 'state'));
    const waits = async () => {
      const stats = await cluster.command(master, 'INFO', 'commandstats');
      return Number(/cmdstat_wait:calls=(\d+)/.exec(stats)?.[1] ?? 0);
    };
    const before = await waits();
    await store.set('waited', state);
    const lease = await store.lease('waited', 5_000);
    expect(lease?.token).toBeGreaterThan(0);
    // WAIT ran on the session's master after each (the pipeline follows the script's slot).
    expect((await waits()) - before).toBe(2);
    // The replica of the session's master has both.
    let replicaPort = 0;
    for (const { port } of cluster.nodes) {
      const info = await cluster.command(port, 'INFO', 'replication');
      if (info.includes('role:slave') && info.includes(`master_port:${master}\r\n`)) replicaPort = port;
    }
    expect(replicaPort).toBeGreaterThan(0);
    const replica = new Redis({ host: '127.0.0.1', port: replicaPort, maxRetriesPerRequest: 1 });
    try {
      await replica.readonly();
      expect(JSON.parse((await replica.get(redisKey(prefix, 'waited', 'state'))) as string).s.calls).toBe(3);
      expect(Number(await replica.get(redisKey(prefix, 'waited', 'fence')))).toBe(lease?.token);
    } finally {
      replica.disconnect();
      await lease?.release();
    }
  });

  it('a holder that paused past its lease while another process compacted: its late commit is refused, the newer compaction stands', async () => {
    const session = 'fenced';
    let reached!: () => void;
    const paused = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let resume!: () => void;
    const gate = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const a = guardOn({
      summarizerTimeoutMs: 30_000,
      summarizer: async (input) => {
        reached();
        await gate; // a GC pause, a stalled summarizer
        return summaryBy('A')(input);
      },
    });
    const b = guardOn({ summarizer: summaryBy('B') });
    const history = overThreshold(session);

    const late = a.guard.beforeModel({ sessionId: session, messages: history });
    await paused;
    // A's lease ends while it is paused (as its renewals would have stopped): expired.
    const raw = cluster.client();
    try {
      expect(await raw.pexpire(redisKey(prefix, session, 'lock'), 1)).toBe(1);
    } finally {
      raw.disconnect();
    }
    await sleep(20);
    const newer = await b.guard.beforeModel({ sessionId: session, messages: history });
    expect(newer.compaction?.summary).toContain('Summary by B');

    resume();
    const lateResult = await late;
    // A still sends its own compacted prompt...
    expect(lateResult.compaction?.summary).toContain('Summary by A');
    expectInvariants(history, lateResult);
    // ...but wrote nothing of it.
    const fenced = a.events.of('compaction-fenced');
    expect(fenced.map((e) => e.record).sort()).toEqual(['archive', 'state']);
    expect(fenced.every((e) => e.token === fenced[0]?.token)).toBe(true);
    expect(a.events.of('store-failed')).toEqual([]);
    const stored = (await open().get(session)) as SessionState;
    expect(JSON.stringify(stored.memo)).toContain('Summary by B');
    expect(JSON.stringify(stored.memo)).not.toContain('Summary by A');
    const receipts = await b.guard.compactions(session);
    expect(receipts).toHaveLength(1);
    expect(JSON.stringify(receipts)).toContain('Summary by B');
    // The next call in A uses B's compaction.
    const next = await a.guard.beforeModel({ sessionId: session, messages: history });
    expect(next.compaction).toBeUndefined();
    expect(JSON.stringify(next.messages)).toBe(JSON.stringify(newer.messages));
    expect([...a.events.of('error'), ...b.events.of('error')]).toEqual([]);
  });
});

describe.skipIf(skip)('RedisStore on a Redis Cluster: a master killed mid-run', () => {
  let cluster: ClusterHandle;
  const prefix = uniquePrefix('failover');
  const stores: RedisStore[] = [];

  beforeAll(async () => {
    // A cluster of our own: killing a master of the shared one would disturb the other test files.
    cluster = await startCluster({ own: true });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(stores.map((s) => Promise.race([s.close().catch(() => {}), sleep(1_000)])));
    await cluster?.close();
  });

  it('calls never throw nor wait more than a few seconds while the replica takes over, and the state written meanwhile is reconciled', async () => {
    const STORE_TIMEOUT_MS = 500;
    /** A call waits for a failing store once (its first operation), plus its release, plus room for a busy machine. */
    const BOUND_MS = 3_000;
    const events = recorder();
    const store = new RedisStore({ nodes: cluster.nodes, prefix });
    stores.push(store);
    let summarizerCalls = 0;
    const guard = createContextGuard({
      contextWindow: WINDOW,
      store,
      storeTimeoutMs: STORE_TIMEOUT_MS,
      summarizer: async (input) => {
        summarizerCalls++;
        return summaryBy('the guard')(input);
      },
      onEvent: events.onEvent,
    });
    const sessions = Array.from({ length: 6 }, (_, i) => ({ id: `fo-${i}`, history: initial(`fo-${i}`), calls: 0 }));
    let slowest = 0;
    const round = async (i: number) => {
      await Promise.all(
        sessions.map(async (s) => {
          s.history = grow(s.history, i, s.id);
          const t0 = performance.now();
          const r = await guard.beforeModel({ sessionId: s.id, messages: s.history });
          await guard.afterModel({ sessionId: s.id, usage: { inputTokens: realCount(r.messages), outputTokens: 225 } });
          slowest = Math.max(slowest, performance.now() - t0);
          expectInvariants(s.history, r);
          s.calls++;
        }),
      );
    };
    let i = 0;
    for (; i < 8; i++) await round(i);
    expect(events.of('store-failed')).toEqual([]);

    // The master of the first session's slot dies without a word (SIGKILL); rounds go on meanwhile.
    const victim = await cluster.masterOf(redisKey(prefix, 'fo-0', 'state'));
    await cluster.kill(victim);
    const killedAt = performance.now();
    const healed = cluster.healthy(45_000).then(() => performance.now() - killedAt);
    let promotedAfter: number | undefined;
    void healed.then((ms) => {
      promotedAfter = ms;
    });
    for (; promotedAfter === undefined && i < 60; i++) await round(i);
    await healed;
    expect(events.of('store-failed').length, 'the dead master was never noticed').toBeGreaterThan(0);
    // Healed: a few more rounds write every session's state back.
    for (const end = i + 4; i < end; i++) await round(i);
    await sleep(200);
    const failedBefore = events.of('store-failed').length;
    await round(i++);
    expect(events.of('store-failed').slice(failedBefore), 'the store still fails after the promotion').toEqual([]);

    expect(slowest, `the slowest call took ${slowest.toFixed(0)} ms`).toBeLessThanOrEqual(BOUND_MS);
    expect(events.of('error')).toEqual([]);
    const reader = new RedisStore({ nodes: cluster.nodes.filter((n) => n.port !== victim), prefix });
    stores.push(reader);
    for (const s of sessions) {
      const stored = (await reader.get(s.id)) as SessionState;
      expect(stored.calls, `${s.id}: calls lost over the failover`).toBe(s.calls);
      expect(stored.usageRecorded, `${s.id}: real counts lost over the failover`).toBe(s.calls);
      expect(stored.memo?.summary, `${s.id}: summary lost`).toBeDefined();
    }
    // Every summarizer call belongs to a compaction this process reported.
    expect(summarizerCalls).toBe(events.of('compaction-end').reduce((n, e) => n + e.summarizerCalls, 0));
  }, 90_000);
});
