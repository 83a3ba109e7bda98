// Where the Redis suites run: a single Redis (REDIS_URL, or a redis-server of our own) and a Redis
// Cluster (REDIS_CLUSTER_NODES, or six nodes of our own), each with a raw client to look at keys.
import { type Cluster, Redis } from 'ioredis';
import type { RedisStoreOptions } from '../../../adapters/redis/index.ts';
import { startCluster, type ClusterHandle } from './cluster.ts';
import { deletePrefix, startRedis, type RedisHandle } from './server.ts';

/** Where a suite runs: a single Redis or a cluster, with a raw client to look at the keys. */
export interface Backend {
  name: string;
  start(): Promise<{
    /** Store options that reach this backend (url, or the cluster's nodes). */
    connection: RedisStoreOptions;
    raw: Redis | Cluster;
    /** A client of the user's own, for `{ client }`. */
    client(): Redis | Cluster;
    /** A plain client on the node that serves `key` (it writes at once, without a cluster's routing). */
    nodeFor(key: string): Promise<Redis>;
    /** Deletes every key under `prefix`. */
    clear(prefix: string): Promise<void>;
    close(): Promise<void>;
  }>;
}

export const backends: Backend[] = [
  {
    name: 'a single Redis',
    async start() {
      const redis: RedisHandle = await startRedis();
      const raw = new Redis(redis.url, { maxRetriesPerRequest: 1 });
      return {
        connection: { url: redis.url },
        raw,
        client: () => new Redis(redis.url, { maxRetriesPerRequest: 1 }),
        nodeFor: async () => raw,
        clear: (prefix) => deletePrefix(redis, prefix),
        close: async () => {
          raw.disconnect();
          await redis.close();
        },
      };
    },
  },
  {
    name: 'a Redis Cluster',
    async start() {
      const cluster: ClusterHandle = await startCluster();
      const raw = cluster.client();
      const nodeClients: Redis[] = [];
      return {
        connection: { nodes: cluster.nodes },
        raw,
        client: () => cluster.client(),
        async nodeFor(key) {
          const node = new Redis({ host: '127.0.0.1', port: await cluster.masterOf(key), maxRetriesPerRequest: 1 });
          nodeClients.push(node);
          return node;
        },
        async clear(prefix) {
          await Promise.all(
            raw.nodes('master').map(async (node) => {
              let cursor = '0';
              do {
                const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
                cursor = next;
                // One key at a time: keys of different sessions are in different slots.
                for (const key of keys) await raw.del(key);
              } while (cursor !== '0');
            }),
          );
        },
        close: async () => {
          raw.disconnect();
          for (const node of nodeClients) node.disconnect();
          await cluster.close();
        },
      };
    },
  },
];
