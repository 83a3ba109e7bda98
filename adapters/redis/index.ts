// 'context-guard/redis': session state shared by every process of an agent server. Values are
// JSON under `prefix + sessionId` with a TTL renewed on each write. Updates are atomic: a version
// field is checked and bumped by a Lua script, and a writer that lost the race re-reads and
// re-applies its change, so two processes never lose each other's calibration or summary. The
// compaction lock is a key set with NX and an expiry, released only by its holder.
import type { Redis, RedisOptions } from 'ioredis';
import { archiveKey } from '../../src/archive/store.ts';
import type { SessionState, StateStore } from '../../src/index.ts';

/** Keys of session archives (see src/archive/store.ts) start with this. */
const ARCHIVE_PREFIX = archiveKey('');

export interface RedisStoreOptions {
  /** An existing ioredis client (the store does not close it). */
  client?: Redis;
  /** A connection URL, e.g. `redis://127.0.0.1:6379`, when no client is given. */
  url?: string;
  /** ioredis options for the connection the store opens itself. */
  redisOptions?: RedisOptions;
  /** Key prefix. Default `cg:`. */
  prefix?: string;
  /** Seconds a session's state lives after its last write. Default 7 days; 0 keeps it forever. */
  ttlSeconds?: number;
  /**
   * Attempts of an update that keeps losing races before it gives up (it then throws; nothing is overwritten). Default
   * 50.
   */
  maxRetries?: number;
}

interface Envelope {
  /** Bumped by every write; an update writes only over the version it read. */
  v: number;
  s: SessionState;
}

// KEYS[1] = state key, KEYS[2] (optional) = the session's archive key; ARGV = expected version, new
// JSON, ttl seconds. Writes only when the stored version is the expected one (0 = absent), so a
// read-modify-write cannot overwrite a newer write. A session's write renews its archive's TTL too:
// the archive is written only at compactions, and must live as long as the session it belongs to.
const COMPARE_AND_SET = `
local current = redis.call('GET', KEYS[1])
local version = 0
if current then
  local ok, decoded = pcall(cjson.decode, current)
  if ok and type(decoded) == 'table' and type(decoded.v) == 'number' then version = decoded.v end
end
if version ~= tonumber(ARGV[1]) then return 0 end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
  if #KEYS > 1 then redis.call('EXPIRE', KEYS[2], ARGV[3]) end
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1
`;

// KEYS[1] = lock key; ARGV[1] = token. Deletes the lock only if this holder still has it.
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

let tokens = 0;
const newToken = () =>
  `${process.pid}:${Date.now().toString(36)}:${(tokens++).toString(36)}:${Math.random().toString(36).slice(2)}`;

/** A `StateStore` on Redis (ioredis), safe to share between processes. */
export class RedisStore implements StateStore<SessionState> {
  readonly prefix: string;
  private readonly ttlSeconds: number;
  private readonly maxRetries: number;
  private readonly ownsClient: boolean;
  private clientPromise: Promise<Redis> | undefined;
  private readonly options: RedisStoreOptions;

  constructor(options: RedisStoreOptions = {}) {
    if (!options.client && !options.url && !options.redisOptions) {
      throw new TypeError('context-guard: RedisStore needs `client`, `url` or `redisOptions`');
    }
    this.options = options;
    this.prefix = options.prefix ?? 'cg:';
    this.ttlSeconds = options.ttlSeconds ?? 7 * 24 * 3600;
    this.maxRetries = options.maxRetries ?? 50;
    this.ownsClient = !options.client;
    if (options.client) this.clientPromise = Promise.resolve(options.client);
  }

  /** The client, created on first use so that importing this module never opens a connection. */
  private client(): Promise<Redis> {
    this.clientPromise ??= import('ioredis').then((mod) => {
      const RedisClass = ((mod as { default?: unknown }).default ?? (mod as { Redis?: unknown }).Redis) as new (
        ...args: unknown[]
      ) => Redis;
      // A command waits for a (re)connection at most one retry; the guard bounds it further with
      // its storeTimeoutMs and goes on with its in-process copy meanwhile.
      const defaults: RedisOptions = { maxRetriesPerRequest: 1, lazyConnect: false };
      const client = this.options.url
        ? new RedisClass(this.options.url, { ...defaults, ...this.options.redisOptions })
        : new RedisClass({ ...defaults, ...this.options.redisOptions });
      // Connection errors surface as failed commands (and the guard's store-failed events); without
      // a listener ioredis would also print every reconnection attempt.
      client.on('error', () => {});
      return client;
    });
    return this.clientPromise;
  }

  private key(sessionId: string): string {
    return `${this.prefix}s:${sessionId}`;
  }

  private async read(sessionId: string): Promise<Envelope | undefined> {
    const raw = await (await this.client()).get(this.key(sessionId));
    if (raw === null) return undefined;
    try {
      const parsed = JSON.parse(raw) as Partial<Envelope>;
      return typeof parsed.v === 'number' && parsed.s ? (parsed as Envelope) : undefined;
    } catch {
      // A corrupt value is no state: the session starts over rather than failing every call.
      return undefined;
    }
  }

  async get(sessionId: string): Promise<SessionState | undefined> {
    return (await this.read(sessionId))?.s;
  }

  async set(sessionId: string, value: SessionState): Promise<void> {
    await this.update(sessionId, () => value);
  }

  async delete(sessionId: string): Promise<void> {
    await (await this.client()).del(this.key(sessionId));
  }

  async update(sessionId: string, fn: (current: SessionState | undefined) => SessionState): Promise<SessionState> {
    const client = await this.client();
    const key = this.key(sessionId);
    for (let attempt = 0; ; attempt++) {
      const current = await this.read(sessionId);
      const version = current?.v ?? 0;
      const next = fn(current?.s);
      const json = JSON.stringify({ v: version + 1, s: next } satisfies Envelope);
      const companion = sessionId.startsWith(ARCHIVE_PREFIX) ? [] : [this.key(archiveKey(sessionId))];
      const written = (await client.eval(
        COMPARE_AND_SET,
        1 + companion.length,
        key,
        ...companion,
        String(version),
        json,
        String(this.ttlSeconds),
      )) as number;
      if (written === 1) return next;
      // Lost the race: another process wrote in between; re-read and apply the change again. A
      // write that keeps losing gives up rather than overwrite what the others wrote (the guard
      // then goes on with its in-process copy and writes it back later).
      if (attempt >= this.maxRetries)
        throw new Error(`context-guard: RedisStore update of "${sessionId}" lost ${attempt + 1} races in a row`);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 * (attempt + 1))));
    }
  }

  async lock(sessionId: string, ttlMs: number): Promise<(() => Promise<void>) | undefined> {
    const client = await this.client();
    const key = `${this.prefix}lock:${sessionId}`;
    const token = newToken();
    const ok = await client.set(key, token, 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX');
    if (ok !== 'OK') return undefined;
    return async () => {
      await client.eval(RELEASE, 1, key, token);
    };
  }

  /** Closes the connection the store opened (not a client passed in). */
  async close(): Promise<void> {
    if (!this.ownsClient || !this.clientPromise) return;
    const client = await this.clientPromise;
    this.clientPromise = undefined;
    await client.quit().catch(() => client.disconnect());
  }
}
