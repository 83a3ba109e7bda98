// A Redis Cluster for the tests: three masters and three replicas on loopback. `.ci/run` starts one
// and exports REDIS_CLUSTER_NODES (`host:port,host:port,...`); elsewhere, and for the tests that
// kill a master (they must not disturb other test files sharing the CI cluster), the tests start
// their own from the same `redis-server` the single-Redis tests use, with `redis-cli --cluster
// create`, and stop exactly the processes they started. No Redis at all fails the tests (see
// server.ts: skipRedisTests).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster } from 'ioredis';
import { freePort, rawCommand, redisServerBin } from './server.ts';

export interface ClusterNodeAddress {
  host: string;
  port: number;
}

export interface ClusterHandle {
  /** Every node, masters and replicas. */
  readonly nodes: ClusterNodeAddress[];
  /** Whether this handle started the cluster (and may kill its nodes). */
  readonly own: boolean;
  /** One command to one node; the reply's first line (or bulk string). */
  command(port: number, ...args: string[]): Promise<string>;
  /** The port of the master serving `key`'s slot now. */
  masterOf(key: string): Promise<number>;
  /** Kills a node of our own (SIGKILL: no goodbye to the cluster). */
  kill(port: number): Promise<void>;
  /** Resolves once every live node reports cluster_state:ok and every slot has a live master. */
  healthy(timeoutMs?: number): Promise<void>;
  /** An ioredis Cluster client on it (the caller disconnects it). */
  client(): Cluster;
  close(): Promise<void>;
}

const execFileAsync = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The node list of REDIS_CLUSTER_NODES, if set. */
export function clusterNodesFromEnv(): ClusterNodeAddress[] | undefined {
  const value = process.env.REDIS_CLUSTER_NODES;
  if (!value) return undefined;
  return value
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((entry) => {
      const at = entry.lastIndexOf(':');
      return { host: entry.slice(0, at) || '127.0.0.1', port: Number(entry.slice(at + 1)) };
    });
}

function redisCliBin(server: string): string {
  const beside = join(dirname(server), 'redis-cli');
  try {
    accessSync(beside, constants.X_OK);
    return beside;
  } catch {
    return 'redis-cli';
  }
}

const processes = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of processes) child.kill('SIGKILL');
});

function handleOn(nodes: ClusterNodeAddress[], own: boolean, stop: () => Promise<void>, kill: ClusterHandle['kill']) {
  const host = (port: number) => nodes.find((n) => n.port === port)?.host ?? '127.0.0.1';
  const command = (port: number, ...args: string[]) => rawCommand(host(port), port, args, 2_000);
  const dead = new Set<number>();
  const handle: ClusterHandle = {
    nodes,
    own,
    command,
    async masterOf(key) {
      const slot = Number(await command(live()[0] as number, 'CLUSTER', 'KEYSLOT', key));
      for (const port of live()) {
        const lines = (await command(port, 'CLUSTER', 'NODES').catch(() => '')).split('\n');
        for (const line of lines) {
          const [, address, flags, , , , , state, ...ranges] = line.split(' ');
          if (!flags?.includes('master') || flags.includes('fail') || state !== 'connected') continue;
          for (const range of ranges) {
            const [from, to = from] = range.split('-').map(Number);
            if (slot >= (from as number) && slot <= (to as number))
              return Number(address?.split('@')[0]?.split(':')[1]);
          }
        }
      }
      throw new Error(`no master serves the slot of ${key}`);
    },
    async kill(port) {
      dead.add(port);
      await kill(port);
    },
    async healthy(timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      let last = '';
      while (Date.now() < deadline) {
        try {
          const infos = await Promise.all(live().map((port) => command(port, 'CLUSTER', 'INFO')));
          // CLUSTER INFO is a bulk string: rawCommand answers all of it.
          // Every slot served by a live master, in every live node's view (a killed master is still
          // listed with its slots until the others have marked it failed and promoted its replica).
          const views = await Promise.all(live().map((port) => command(port, 'CLUSTER', 'NODES')));
          const servedByLive = views.every((view) =>
            view
              .split('\n')
              .filter((line) => line.split(' ')[2]?.includes('master') && line.split(' ').length > 8)
              .every((line) => {
                const [, address, flags] = line.split(' ');
                const port = Number(address?.split('@')[0]?.split(':')[1]);
                return live().includes(port) && !flags?.includes('fail');
              }),
          );
          const ok = infos.every(
            (info) => info.includes('cluster_state:ok') && info.includes('cluster_slots_ok:16384'),
          );
          if (servedByLive && ok) return;
          last = infos.map((i) => i.split('\r\n')[0]).join(', ');
        } catch (error) {
          last = String(error);
        }
        await sleep(100);
      }
      throw new Error(`the cluster did not become healthy within ${timeoutMs} ms (${last})`);
    },
    client() {
      const client = new Cluster(
        live().map((port) => ({ host: host(port), port })),
        { redisOptions: { maxRetriesPerRequest: 1 }, retryDelayOnFailover: 100, slotsRefreshTimeout: 1_000 },
      );
      client.on('error', () => {});
      return client;
    },
    close: stop,
  };
  const live = () => nodes.map((n) => n.port).filter((p) => !dead.has(p));
  return handle;
}

/**
 * A cluster for a test file: REDIS_CLUSTER_NODES when set (unless `own`), else six nodes of our own
 * on free loopback ports. Throws, with instructions, when neither can be had.
 */
export async function startCluster(options: { own?: boolean } = {}): Promise<ClusterHandle> {
  const fromEnv = clusterNodesFromEnv();
  if (fromEnv && !options.own) {
    const handle = handleOn(
      fromEnv,
      false,
      async () => {},
      async () => {
        throw new Error('REDIS_CLUSTER_NODES is not ours to kill: ask for a cluster of our own');
      },
    );
    await handle.healthy(5_000);
    return handle;
  }
  const bin = redisServerBin();
  if (!bin)
    throw new Error(
      'context-guard: the cluster tests need redis-server (and redis-cli) or REDIS_CLUSTER_NODES; `.ci/run` starts a cluster itself.',
    );
  const dir = mkdtempSync(join(tmpdir(), 'cg-cluster-'));
  const nodes: ClusterNodeAddress[] = [];
  const children = new Map<number, ChildProcess>();
  const stop = async () => {
    await Promise.all(
      [...children.values()].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    children.clear();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // Every port distinct across the cluster: freePort only knows what is bound now, and a node
    // started a moment ago may not have bound its bus port yet.
    const taken = new Set<number>();
    const distinctPort = async (): Promise<number> => {
      let port = await freePort();
      while (taken.has(port)) port = await freePort();
      taken.add(port);
      return port;
    };
    const startNode = async (): Promise<{ port: number; child: ChildProcess }> => {
      const port = await distinctPort();
      // The cluster bus needs a port of its own: another free one, not port + 10,000 (maybe taken, or past 65,535).
      const bus = await distinctPort();
      const child = spawn(bin, clusterNodeArgs(port, bus, dir), { stdio: 'ignore' });
      processes.add(child);
      child.on('exit', () => processes.delete(child));
      return { port, child };
    };
    for (let i = 0; i < 6; i++) {
      // A port another process bound between freePort and redis-server (tests run in parallel)
      // ends the node at once: it is started again on new ports.
      for (let start = 1; ; start++) {
        const { port, child } = await startNode();
        if (await answers(port, child)) {
          children.set(port, child);
          nodes.push({ host: '127.0.0.1', port });
          break;
        }
        child.kill('SIGKILL');
        if (start === 3) throw new Error(`cluster node ${port} did not start (three attempts)`);
      }
    }
    await execFileAsync(
      redisCliBin(bin),
      ['--cluster', 'create', ...nodes.map((n) => `${n.host}:${n.port}`), '--cluster-replicas', '1', '--cluster-yes'],
      { timeout: 30_000 },
    );
    const handle = handleOn(nodes, true, stop, async (port) => {
      const child = children.get(port);
      if (!child) return;
      children.delete(port);
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      });
    });
    await handle.healthy();
    // Replicas synced with their masters: a failover loses nothing written before this.
    for (const { port } of nodes) {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const info = await rawCommand('127.0.0.1', port, ['INFO', 'replication']);
        if (!info.includes('role:slave') || info.includes('master_link_status:up')) break;
        if (Date.now() > deadline) throw new Error(`replica ${port} did not sync`);
        await sleep(50);
      }
    }
    return handle;
  } catch (error) {
    await stop();
    throw error;
  }
}

/** redis-server's arguments for a node of a test cluster. */
function clusterNodeArgs(port: number, bus: number, dir: string): string[] {
  return [
    '--port',
    String(port),
    '--cluster-port',
    String(bus),
    '--bind',
    '127.0.0.1',
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    join(dir, `nodes-${port}.conf`),
    // A master that stops answering for a second is failed over.
    // Replicas sync at once (the default waits 5 s for more replicas to share a transfer).
    '--repl-diskless-sync-delay',
    '0',
    '--cluster-node-timeout',
    '1000',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--logfile',
    '',
    '--loglevel',
    'warning',
  ];
}

/** Whether a node just started answers PING (false as soon as its process ends; 30 s at most, for a loaded machine). */
async function answers(port: number, child: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    if ((await rawCommand('127.0.0.1', port, ['PING'], 500).catch(() => '')) === 'PONG') return true;
    await sleep(50);
  }
  return false;
}
