// RedisStore against a real redis-server: the StateStore contract, keys and TTL, atomic updates
// under contention from many connections, the compaction lock, and corrupt values.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveKey } from '../../../src/archive/store.ts';
import { RedisStore } from '../../../adapters/redis/index.ts';
import type { SessionState, StateStore } from '../../../src/index.ts';
import { deletePrefix, skipRedisTests, startRedis, uniquePrefix, type RedisHandle } from './server.ts';

const skip = skipRedisTests('test/adapters/redis/redis-store.test.ts');

const state = (calls: number, extra: Partial<SessionState> = {}): SessionState => ({
  version: 1,
  calibration: {},
  calls,
  usageRecorded: 0,
  ...extra,
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(skip)('RedisStore', () => {
  let redis: RedisHandle;
  let raw: Redis;
  const prefix = uniquePrefix('store');
  const stores: RedisStore[] = [];
  const open = (options: ConstructorParameters<typeof RedisStore>[0] = {}) => {
    const store = new RedisStore({ url: redis.url, prefix, ...options });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    if (redis) await deletePrefix(redis, prefix);
    raw?.disconnect();
    await redis?.close();
  });

  it('needs a client, a url or redis options', () => {
    expect(() => new RedisStore()).toThrow(TypeError);
  });

  it('gets, sets and deletes (a JSON round trip)', async () => {
    const store = open();
    const value = state(3, {
      usageRecorded: 2,
      calibration: {
        anchor: {
          chars: 10,
          mediaTokens: 0,
          toolChars: 0,
          prompt: { messages: 2, chars: 10, hash: 7 },
          realTokens: 12,
        },
      },
      status: { tokens: 12, source: 'provider', threshold: 6400, contextWindow: 8000, fraction: 0.0015 },
    });
    expect(await store.get('rt')).toBeUndefined();
    await store.set('rt', value);
    expect(await store.get('rt')).toEqual(value);
    // A second connection (another process, in effect) reads the same value.
    expect(await open().get('rt')).toEqual(value);
    await store.set('rt', state(4));
    expect((await store.get('rt'))?.calls).toBe(4);
    await store.delete('rt');
    expect(await store.get('rt')).toBeUndefined();
    await store.delete('never-there'); // deleting nothing is fine
  });

  it('keeps keys under its prefix; other prefixes do not see them', async () => {
    const store = open();
    await store.set('pfx', state(1));
    expect(await raw.exists(`${prefix}s:pfx`)).toBe(1);
    const other = open({ prefix: `${prefix}other:` });
    expect(await other.get('pfx')).toBeUndefined();
    await other.set('pfx', state(9));
    expect((await store.get('pfx'))?.calls).toBe(1);
    expect((await other.get('pfx'))?.calls).toBe(9);
    expect(store.prefix).toBe(prefix);
    expect(new RedisStore({ url: redis.url }).prefix).toBe('cg:');
  });

  it('writes with a TTL, renews it on every write, and keeps keys forever with ttlSeconds 0', async () => {
    const store = open({ ttlSeconds: 100 });
    await store.set('ttl', state(1));
    const ttl = await raw.pttl(`${prefix}s:ttl`);
    expect(ttl).toBeGreaterThan(95_000);
    expect(ttl).toBeLessThanOrEqual(100_000);
    await raw.pexpire(`${prefix}s:ttl`, 5_000);
    await store.update('ttl', (s) => ({ ...(s ?? state(0)), calls: (s?.calls ?? 0) + 1 }));
    expect(await raw.pttl(`${prefix}s:ttl`)).toBeGreaterThan(95_000);

    const forever = open({ ttlSeconds: 0 });
    await forever.set('forever', state(1));
    expect(await raw.pttl(`${prefix}s:forever`)).toBe(-1);
  });

  it("renews the session's archive TTL with every write of the session (the archive is written only at compactions)", async () => {
    const store = open({ ttlSeconds: 100 });
    const archived = `${prefix}s:${archiveKey('kept')}`;
    await (store as unknown as StateStore<unknown>).set(archiveKey('kept'), {
      version: 1,
      batches: [],
      receipts: [],
      evicted: 0,
    });
    await raw.pexpire(archived, 5_000);
    await store.update('kept', (s) => ({ ...(s ?? state(0)), calls: (s?.calls ?? 0) + 1 }));
    expect(await raw.pttl(archived)).toBeGreaterThan(95_000);
    // An archive's own write does not touch anything else; a session without an archive creates none.
    await store.set('alone', state(1));
    expect(await raw.exists(`${prefix}s:${archiveKey('alone')}`)).toBe(0);
  });

  it('lets a session expire after its TTL', async () => {
    const store = open({ ttlSeconds: 1 });
    await store.set('expires', state(1));
    expect(await store.get('expires')).toBeDefined();
    await sleep(1_150);
    expect(await store.get('expires')).toBeUndefined();
  });

  it('never loses an increment: 50 parallel updates from 10 connections', async () => {
    const clients = Array.from({ length: 10 }, () => open());
    let applications = 0;
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        (clients[i % clients.length] as RedisStore).update('counter', (current) => {
          applications++;
          return { ...(current ?? state(0)), calls: (current?.calls ?? 0) + 1 };
        }),
      ),
    );
    expect((await open().get('counter'))?.calls).toBe(50);
    // Lost races re-applied the change on the fresh value rather than writing over it.
    expect(applications).toBeGreaterThanOrEqual(50);
  });

  it('never loses an increment under heavy contention (500 updates from 50 connections: retries run out)', async () => {
    // With the default maxRetries (20), some of 500 writers on one key lose more than 20 races.
    // The adapter then writes "anyway" (a plain SET over whatever is stored), which drops every
    // increment committed since that writer's last read (measured: 406 of 500 kept). Atomic means
    // an update that resolved is in the store; an update that cannot get through may reject
    // instead (the guard turns that into a store-failed event), but never report success falsely.
    const clients = Array.from({ length: 50 }, () => open());
    const results = await Promise.allSettled(
      Array.from({ length: 500 }, (_, i) =>
        (clients[i % clients.length] as RedisStore).update('contended', (current) => ({
          ...(current ?? state(0)),
          calls: (current?.calls ?? 0) + 1,
        })),
      ),
    );
    const resolved = results.filter((r) => r.status === 'fulfilled').length;
    expect((await open().get('contended'))?.calls).toBe(resolved);
  });

  it('update returns what it wrote, and a lost race re-applies the change to the fresh value', async () => {
    const a = open();
    await a.set('race', state(1));
    let applications = 0;
    const written = await a.update('race', (current) => {
      applications++;
      if (applications === 1) {
        // Another process writes between this read and the compare-and-set (a newer version).
        void raw.set(`${prefix}s:race`, JSON.stringify({ v: 99, s: state(10, { usageRecorded: 5 }) }));
        const until = Date.now() + 30;
        while (Date.now() < until); // let that write reach the server before our compare-and-set
      }
      return { ...(current ?? state(0)), calls: (current?.calls ?? 0) + 1 };
    });
    expect(applications).toBe(2);
    expect(written).toEqual(state(11, { usageRecorded: 5 }));
    expect(await open().get('race')).toEqual(written);
  });

  it('treats corrupt JSON (or a value that is not an envelope) as absent, and writes over it', async () => {
    const store = open();
    for (const junk of ['not json {', '{"s":{"calls":1}}', '[1,2,3]', '{"v":"1","s":{}}', 'null']) {
      await raw.set(`${prefix}s:corrupt`, junk);
      expect(await store.get('corrupt')).toBeUndefined();
      const next = await store.update('corrupt', (current) => {
        expect(current).toBeUndefined();
        return state(1);
      });
      expect(next.calls).toBe(1);
      expect((await store.get('corrupt'))?.calls).toBe(1);
    }
  });

  describe('lock', () => {
    it('is exclusive across connections until released', async () => {
      const a = open();
      const b = open();
      const release = await a.lock('L1', 5_000);
      expect(release).toBeTypeOf('function');
      expect(await b.lock('L1', 5_000)).toBeUndefined();
      expect(await a.lock('L1', 5_000)).toBeUndefined(); // not re-entrant either
      expect(await b.lock('other-session', 5_000)).toBeTypeOf('function'); // per session
      await release?.();
      const again = await b.lock('L1', 5_000);
      expect(again).toBeTypeOf('function');
      await again?.();
    });

    it('expires after its ttl', async () => {
      const a = open();
      const b = open();
      expect(await a.lock('L2', 150)).toBeTypeOf('function');
      expect(await b.lock('L2', 150)).toBeUndefined();
      const pttl = await raw.pttl(`${prefix}lock:L2`);
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(150);
      await sleep(250);
      const taken = await b.lock('L2', 5_000);
      expect(taken).toBeTypeOf('function');
      await taken?.();
    });

    it('is released only by its holder (a stale release after expiry does not free the next holder)', async () => {
      const a = open();
      const b = open();
      const c = open();
      const staleRelease = await a.lock('L3', 100);
      await sleep(200);
      const bRelease = await b.lock('L3', 5_000);
      expect(bRelease).toBeTypeOf('function');
      await staleRelease?.(); // a's lock expired: this must not delete b's
      expect(await c.lock('L3', 5_000)).toBeUndefined();
      await bRelease?.();
      await bRelease?.(); // releasing twice is harmless
      const cRelease = await c.lock('L3', 5_000);
      expect(cRelease).toBeTypeOf('function');
      await cRelease?.();
    });

    it('lets exactly one of many concurrent contenders in', async () => {
      const contenders = Array.from({ length: 20 }, () => open());
      const results = await Promise.all(contenders.map((s) => s.lock('L4', 5_000)));
      expect(results.filter(Boolean)).toHaveLength(1);
      await results.find(Boolean)?.();
    });
  });

  it('closes the connection it opened, and leaves a client it was given open', async () => {
    const own = new RedisStore({ url: redis.url, prefix });
    await own.set('close', state(1));
    await own.close();
    await own.close(); // twice is fine

    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    const shared = new RedisStore({ client, prefix });
    expect((await shared.get('close'))?.calls).toBe(1);
    await shared.close();
    expect(await client.ping()).toBe('PONG');
    client.disconnect();
  });
});
