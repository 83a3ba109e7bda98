// RedisStore with a client of iovalkey (the Valkey project's fork of ioredis), on a single server
// and on a cluster: the store takes its `Redis` and its `Cluster` as it takes ioredis's, and the
// guard's whole path (state, archive, fenced lease) runs through it.
import { Cluster, Redis } from 'iovalkey';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../../adapters/redis/index.ts';
import { expectIsolated } from '../../state/isolation.ts';
import { backends, type Backend } from './backends.ts';
import { skipRedisTests, uniquePrefix } from './server.ts';

const skip = skipRedisTests('test/adapters/redis/iovalkey.test.ts');

describe.skipIf(skip).each(backends)('RedisStore with an iovalkey client on $name', (backend) => {
  let env: Awaited<ReturnType<Backend['start']>>;
  let client: Redis | Cluster;
  const prefix = uniquePrefix('iovalkey');

  beforeAll(async () => {
    env = await backend.start();
    const { url, nodes } = env.connection;
    client = nodes
      ? new Cluster(nodes as Array<{ host: string; port: number }>, { redisOptions: { maxRetriesPerRequest: 1 } })
      : new Redis(url as string, { maxRetriesPerRequest: 1 });
  }, 60_000);
  afterAll(async () => {
    client?.disconnect();
    if (env) await env.clear(prefix);
    await env?.close();
  });

  it('runs the guard through it: compactions, archives and recall, sessions kept apart', async () => {
    const store = new RedisStore({ client, prefix });
    await expectIsolated({ store });
    const lease = await store.lease('valkey', 5_000);
    expect(lease?.token).toBeGreaterThan(0);
    await lease?.release();
    await store.close(); // not ours: the client stays open
    expect(await client.set(`${prefix}{still-open}:state`, '1')).toBe('OK');
  });
});
