// 'context-guard/redis': session state shared by every process of an agent server, on one Redis or
// on a Redis Cluster (ioredis or iovalkey clients). Values are JSON with a TTL renewed on each
// write. Updates are atomic: a version field is checked and bumped by a Lua script, and a writer
// that lost the race re-reads and re-applies its change, so two processes never lose each other's
// calibration or summary.
//
// Keys (see keys.ts): every record of one session carries one hash tag, the encoded session id, so
// a session lives in one cluster slot and every script touching several of its keys is legal on a
// cluster, while different sessions spread over all masters:
//   <prefix>{<session>}:state   the session's state            <prefix>{<session>}:lock    the compaction lease
//   <prefix>{<session>}:archive its archive and receipts       <prefix>{<session>}:fence   the lease counter
// The compaction lock is a lease with a fencing token: the counter is bumped atomically with each
// grant, and a compaction's writes carry their token; a write whose token is older than the newest
// granted is refused (StaleLeaseError), so a holder that paused past its lease never overwrites a
// newer compaction.
import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import {
  parseRecordKey,
  StaleLeaseError,
  type SessionState,
  type StateStore,
  type StoreLease,
  type StoreWriteOptions,
} from '../../src/index.ts';
import { redisKey, type KeyKind } from './keys.ts';

export { encodeSessionId } from './keys.ts';

/**
 * What the store needs of a client: ioredis's `Redis` and `Cluster` have it, and so have iovalkey's
 * (a fork with the same API).
 */
export interface RedisClientLike {
  get(key: string): Promise<string | null>;
  del(...keys: string[]): Promise<number>;
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  pipeline(): {
    eval(script: string, numKeys: number, ...args: Array<string | number>): unknown;
    wait(replicas: number, timeout: number): unknown;
    exec(): Promise<Array<[Error | null, unknown]> | null>;
  };
  quit(): Promise<unknown>;
  disconnect(): void;
}

export interface RedisStoreOptions {
  /**
   * An existing client: an ioredis `Redis` or `Cluster`, or iovalkey's. The store does not close it.
   */
  client?: Redis | Cluster | RedisClientLike;
  /** A connection URL, e.g. `redis://127.0.0.1:6379`, when no client is given. */
  url?: string;
  /**
   * The nodes of a Redis Cluster (any few of them; the client discovers the rest): the store opens
   * an ioredis `Cluster` itself.
   */
  nodes?: ReadonlyArray<ClusterNode>;
  /** ioredis options for the connection the store opens itself (for a cluster: of each node). */
  redisOptions?: RedisOptions;
  /** ioredis `Cluster` options when the store opens a cluster (`nodes`). */
  clusterOptions?: Omit<ClusterOptions, 'redisOptions'>;
  /** Key prefix (no `{` or `}`: the hash tag is the session's). Default `cg:`. */
  prefix?: string;
  /** Seconds a session's state lives after its last write. Default 7 days; 0 keeps it forever. */
  ttlSeconds?: number;
  /**
   * Attempts of an update that keeps losing races before it gives up (it then throws; nothing is overwritten). Default
   * 50.
   */
  maxRetries?: number;
  /**
   * After each write and lease grant, wait until this many replicas have it (Redis `WAIT`), at most
   * `timeoutMs` (default 100): a failover right after then loses none of it. Off by default (a
   * write is acknowledged by its master alone; see docs/RELIABILITY.md).
   */
  waitForReplicas?: { replicas: number; timeoutMs?: number };
}

interface Envelope {
  /** Bumped by every write; an update writes only over the version it read. */
  v: number;
  s: unknown;
}

// KEYS[1] = the record's key, KEYS[2] = the session's lease counter, KEYS[3..] = the session's other
// records whose TTL a write of its state renews; ARGV = expected version, new JSON, ttl seconds, the
// writer's fencing token ('' for none). Refuses (-newest) a fenced write when a newer lease was
// granted; writes only when the stored version is the expected one (0 = absent), so a
// read-modify-write cannot overwrite a newer write. A session's write renews its archive's and its
// counter's TTL too: they are written only at compactions, and must live as long as the session.
const COMPARE_AND_SET = `
if ARGV[4] ~= '' then
  local newest = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
  if newest > tonumber(ARGV[4]) then return -newest end
end
local current = redis.call('GET', KEYS[1])
local version = 0
if current then
  local ok, decoded = pcall(cjson.decode, current)
  if ok and type(decoded) == 'table' and type(decoded.v) == 'number' then version = decoded.v end
end
if version ~= tonumber(ARGV[1]) then return 0 end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
  for i = 2, #KEYS do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1
`;

// KEYS[1] = lease key, KEYS[2] = the session's lease counter; ARGV = holder, ttl ms, counter ttl
// seconds. Grants the lease when free, with the next fencing token (0 when taken).
const GRANT = `
if not redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 0 end
local token = redis.call('INCR', KEYS[2])
if tonumber(ARGV[3]) > 0 then redis.call('EXPIRE', KEYS[2], ARGV[3]) end
return token
`;

// KEYS[1] = lease key; ARGV = holder, ttl ms. Extends the lease only if this holder still has it.
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

// KEYS[1] = lease key; ARGV[1] = holder. Deletes the lease only if this holder still has it.
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

let holders = 0;
const newHolder = () =>
  `${process.pid}:${Date.now().toString(36)}:${(holders++).toString(36)}:${Math.random().toString(36).slice(2)}`;

/** A `StateStore` on Redis or Redis Cluster (ioredis, iovalkey), safe to share between processes. */
export class RedisStore implements StateStore<SessionState> {
  readonly prefix: string;
  private readonly ttlSeconds: number;
  private readonly maxRetries: number;
  private readonly ownsClient: boolean;
  private clientPromise: Promise<RedisClientLike> | undefined;
  private readonly options: RedisStoreOptions;

  constructor(options: RedisStoreOptions = {}) {
    if (!options.client && !options.url && !options.redisOptions && !options.nodes) {
      throw new TypeError('context-guard: RedisStore needs `client`, `url`, `nodes` or `redisOptions`');
    }
    if (options.nodes && (!Array.isArray(options.nodes) || options.nodes.length === 0)) {
      throw new TypeError('context-guard: RedisStore `nodes` must list at least one cluster node');
    }
    const prefix = options.prefix ?? 'cg:';
    if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
      throw new TypeError(
        'context-guard: RedisStore `prefix` must be a string without `{` or `}` (each session has its own hash tag)',
      );
    }
    this.options = options;
    this.prefix = prefix;
    this.ttlSeconds = options.ttlSeconds ?? 7 * 24 * 3600;
    this.maxRetries = options.maxRetries ?? 50;
    this.ownsClient = !options.client;
    if (options.client) this.clientPromise = Promise.resolve(options.client as RedisClientLike);
  }

  /** The client, created on first use so that importing this module never opens a connection. */
  private client(): Promise<RedisClientLike> {
    this.clientPromise ??= import('ioredis').then((mod) => {
      const m = mod as { default?: unknown; Redis?: unknown; Cluster?: unknown };
      // A command waits for a (re)connection at most one retry; the guard bounds it further with
      // its storeTimeoutMs and goes on with its in-process copy meanwhile.
      const defaults: RedisOptions = { maxRetriesPerRequest: 1, lazyConnect: false };
      let client: RedisClientLike & { on(event: string, listener: () => void): unknown };
      if (this.options.nodes) {
        const ClusterClass = (m.Cluster ?? (m.default as { Cluster?: unknown })?.Cluster) as new (
          ...args: unknown[]
        ) => typeof client;
        client = new ClusterClass(this.options.nodes, {
          // A failover moves a slot in about a second: retry soon, and let the guard's store
          // timeout bound the wait.
          retryDelayOnFailover: 100,
          retryDelayOnClusterDown: 100,
          retryDelayOnTryAgain: 100,
          slotsRefreshTimeout: 1_000,
          ...this.options.clusterOptions,
          redisOptions: { ...defaults, ...this.options.redisOptions },
        });
      } else {
        const RedisClass = (m.default ?? m.Redis) as new (...args: unknown[]) => typeof client;
        client = this.options.url
          ? new RedisClass(this.options.url, { ...defaults, ...this.options.redisOptions })
          : new RedisClass({ ...defaults, ...this.options.redisOptions });
      }
      // Connection errors surface as failed commands (and the guard's store-failed events); without
      // a listener ioredis would also print every reconnection attempt.
      client.on('error', () => {});
      return client;
    });
    return this.clientPromise;
  }

  /** The Redis key of a record (`key` as the guard makes it: see recordKey). */
  private recordKey(key: string): { key: string; session: string } {
    const record = parseRecordKey(key);
    if (!record) throw new TypeError(`context-guard: RedisStore: ${JSON.stringify(key)} is not a key the guard makes`);
    return { key: this.key(record.sessionId, record.kind), session: record.sessionId };
  }

  private key(sessionId: string, kind: KeyKind): string {
    return redisKey(this.prefix, sessionId, kind);
  }

  private async read(key: string): Promise<Envelope | undefined> {
    const raw = await (await this.client()).get(key);
    if (raw === null) return undefined;
    try {
      const parsed = JSON.parse(raw) as Partial<Envelope>;
      return typeof parsed.v === 'number' && parsed.s ? (parsed as Envelope) : undefined;
    } catch {
      // A corrupt value is no state: the session starts over rather than failing every call.
      return undefined;
    }
  }

  async get(key: string): Promise<SessionState | undefined> {
    return (await this.read(this.recordKey(key).key))?.s as SessionState | undefined;
  }

  async set(key: string, value: SessionState): Promise<void> {
    await this.update(key, () => value);
  }

  async delete(key: string): Promise<void> {
    await (await this.client()).del(this.recordKey(key).key);
  }

  async update(
    key: string,
    fn: (current: SessionState | undefined) => SessionState,
    options: StoreWriteOptions = {},
  ): Promise<SessionState> {
    const client = await this.client();
    const record = parseRecordKey(key);
    if (!record) throw new TypeError(`context-guard: RedisStore: ${JSON.stringify(key)} is not a key the guard makes`);
    const target = this.key(record.sessionId, record.kind);
    const keys = [target, this.key(record.sessionId, 'fence')];
    // A session's write renews its archive's TTL (written only at compactions).
    if (record.kind === 'state') keys.push(this.key(record.sessionId, 'archive'));
    const fence = options.fence;
    for (let attempt = 0; ; attempt++) {
      const current = await this.read(target);
      const version = current?.v ?? 0;
      const next = fn(current?.s as SessionState | undefined);
      const json = JSON.stringify({ v: version + 1, s: next } satisfies Envelope);
      const args = [...keys, String(version), json, String(this.ttlSeconds), fence === undefined ? '' : String(fence)];
      const written = Number(await this.eval(client, COMPARE_AND_SET, keys.length, args));
      if (written === 1) return next;
      if (written < 0) throw new StaleLeaseError(fence as number, -written);
      // Lost the race: another process wrote in between; re-read and apply the change again. A
      // write that keeps losing gives up rather than overwrite what the others wrote (the guard
      // then goes on with its in-process copy and writes it back later).
      if (attempt >= this.maxRetries)
        throw new Error(`context-guard: RedisStore update of "${record.sessionId}" lost ${attempt + 1} races in a row`);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 * (attempt + 1))));
    }
  }

  /**
   * A script, followed by `WAIT` when `waitForReplicas` asks for it (in one pipeline: on a cluster
   * it goes to the node of the script's keys). The script's answer either way.
   */
  private async eval(client: RedisClientLike, script: string, numKeys: number, args: string[]): Promise<unknown> {
    const wait = this.options.waitForReplicas;
    if (!wait || wait.replicas <= 0) return client.eval(script, numKeys, ...args);
    const pipeline = client.pipeline();
    pipeline.eval(script, numKeys, ...args);
    pipeline.wait(wait.replicas, wait.timeoutMs ?? 100);
    const [[error, result] = [null, undefined]] = (await pipeline.exec()) ?? [];
    if (error) throw error;
    return result;
  }

  async lease(sessionId: string, ttlMs: number): Promise<StoreLease | undefined> {
    const client = await this.client();
    const key = this.key(sessionId, 'lock');
    const holder = newHolder();
    const ttl = String(Math.max(1, Math.ceil(ttlMs)));
    const token = Number(
      await this.eval(client, GRANT, 2, [key, this.key(sessionId, 'fence'), holder, ttl, String(this.ttlSeconds)]),
    );
    if (!(token > 0)) return undefined;
    return {
      token,
      renew: async (ms) => Number(await client.eval(RENEW, 1, key, holder, String(Math.max(1, Math.ceil(ms))))) === 1,
      release: async () => {
        await client.eval(RELEASE, 1, key, holder);
      },
    };
  }

  async lock(sessionId: string, ttlMs: number): Promise<(() => Promise<void>) | undefined> {
    const lease = await this.lease(sessionId, ttlMs);
    return lease ? () => lease.release() : undefined;
  }

  /** Closes the connection the store opened (not a client passed in). */
  async close(): Promise<void> {
    if (!this.ownsClient || !this.clientPromise) return;
    const client = await this.clientPromise;
    this.clientPromise = undefined;
    await client.quit().catch(() => client.disconnect());
  }
}
