// A Redis for the tests. `.ci/run` starts one on a loopback port of its own and exports REDIS_URL
// (and REDIS_SERVER_BIN); elsewhere the tests start `redis-server` themselves on a free loopback
// port with a temporary directory and no persistence, and stop it afterwards.
//
// The fault tests need to stop, restart and stall the server. They get a server of their own
// (from REDIS_SERVER_BIN or PATH) even when REDIS_URL is set, so that stopping it cannot disturb
// anything else; when only REDIS_URL is available (a Redis in a container, say), they reach it
// through an in-process TCP proxy that can drop every connection and refuse new ones, which is
// what a client sees of a stopped server. Slowness is `CLIENT PAUSE <ms> ALL`: the server holds
// every client's commands (not the admin connection that paused it) until the pause ends.
//
// When no Redis can be had, the Redis tests FAIL, loudly, with instructions. A skip is available
// only outside CI and only when asked for explicitly (CONTEXT_GUARD_SKIP_REDIS=1), and it is
// logged on stderr. Why not skip by default on a developer machine: a suite that quietly goes
// green without its shared-state tests is exactly how a regression in RedisStore would ship, and
// "no redis-server installed" is one `apt-get install redis-server` away. Why never skip in CI
// (CI=true), even when asked: the issue's acceptance says the Redis tests never silently skip in
// CI, and an environment variable left in a CI config would be silent in practice.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/** A Redis the tests talk to. */
export interface RedisHandle {
  /** `redis://127.0.0.1:<port>` (the proxy's address when the server is reached through one). */
  readonly url: string;
  readonly port: number;
  /** Whether `stop` / `start` are available (a server of our own, or a proxy in front of one). */
  readonly controllable: boolean;
  /** Stops the server (or drops every connection and refuses new ones). Resolves once it is down. */
  stop(): Promise<void>;
  /** Starts it again on the same port. A restarted server of our own is empty (no persistence). */
  start(): Promise<void>;
  /** Holds every other client's commands for `ms` milliseconds (`CLIENT PAUSE ms ALL`). */
  pause(ms: number): Promise<void>;
  /** Ends a pause early (`CLIENT UNPAUSE`). */
  unpause(): Promise<void>;
  /** One command on a short-lived admin connection; the reply's first line (or bulk string). */
  command(...args: string[]): Promise<string>;
  /** Stops what this handle started. Idempotent. */
  close(): Promise<void>;
}

const truthy = (value: string | undefined) =>
  value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false';

/** Whether we run in CI (the issue's `CI=true`; any non-false value counts). */
export const inCI = truthy(process.env.CI);

/** The redis-server binary: REDIS_SERVER_BIN, else the first `redis-server` on PATH, else undefined. */
export function redisServerBin(): string | undefined {
  const candidates = [
    process.env.REDIS_SERVER_BIN,
    ...(process.env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'redis-server')),
  ];
  for (const candidate of candidates) {
    if (!candidate) continue;
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not there, try the next one
    }
  }
  return undefined;
}

const HOW_TO_FIX =
  'The Redis tests need a Redis: set REDIS_URL=redis://host:port, or install redis-server ' +
  '(Debian/Ubuntu: `apt-get install redis-server`; macOS: `brew install redis`) or point REDIS_SERVER_BIN at it. ' +
  '`.ci/run` does all of this itself.';

/**
 * Decides, when a test file loads, whether its Redis tests run. Returns `true` to skip (only when
 * explicitly asked, outside CI, and logged); throws, failing the file, when no Redis can be had.
 */
export function skipRedisTests(file: string): boolean {
  // Either one serves every test (a controllable Redis is a proxy in front of REDIS_URL when no
  // binary is installed); whether it actually answers is checked by startRedis, loudly.
  if (redisServerBin() !== undefined || process.env.REDIS_URL) return false;
  const why = `context-guard: no Redis for ${file}: REDIS_URL is not set and no redis-server binary was found (REDIS_SERVER_BIN, PATH).`;
  if (!inCI && truthy(process.env.CONTEXT_GUARD_SKIP_REDIS)) {
    process.stderr.write(
      `\n*** SKIPPED: ${why}\n*** CONTEXT_GUARD_SKIP_REDIS is set: the Redis tests of ${file} do NOT run. ${HOW_TO_FIX}\n\n`,
    );
    return true;
  }
  throw new Error(
    `${why}\n${HOW_TO_FIX}\n` +
      (inCI
        ? 'CI=true: the Redis tests never skip in CI.'
        : 'To skip them on this machine on purpose (never in CI), set CONTEXT_GUARD_SKIP_REDIS=1.'),
  );
}

/** A free TCP port on the loopback interface (free when asked; taken by whoever binds it first). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const encode = (args: string[]) =>
  `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;

/** Sends one RESP command on a fresh connection and returns the reply (first line, or the bulk string). */
export function rawCommand(host: string, port: number, args: string[], timeoutMs = 2_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    let buffer = Buffer.alloc(0);
    const done = (error: Error | undefined, reply?: string) => {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(reply as string);
    };
    const timer = setTimeout(
      () => done(new Error(`redis ${args[0]} on ${host}:${port}: no reply within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.on('connect', () => socket.write(encode(args)));
    socket.on('error', (error) => done(error));
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      const end = buffer.indexOf('\r\n');
      if (end < 0) return;
      const line = buffer.subarray(0, end).toString();
      if (line.startsWith('-')) return done(new Error(`redis ${args.join(' ')}: ${line.slice(1)}`));
      if (line.startsWith('$')) {
        const length = Number(line.slice(1));
        if (length < 0) return done(undefined, '');
        if (buffer.length < end + 2 + length) return;
        return done(undefined, buffer.subarray(end + 2, end + 2 + length).toString());
      }
      done(undefined, line.slice(1));
    });
    // SHUTDOWN closes the connection without a reply: that is its success.
    socket.on('close', () => done(undefined, ''));
  });
}

async function waitForPing(
  host: string,
  port: number,
  timeoutMs: number,
  exited: () => string | undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    const exit = exited();
    if (exit !== undefined) throw new Error(exit);
    try {
      if ((await rawCommand(host, port, ['PING'], 500)) === 'PONG') return;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis on ${host}:${port} did not answer PING within ${timeoutMs} ms: ${String(last)}`);
}

/** Servers and directories still there, removed if the test process exits without closing them. */
const children = new Set<ChildProcess>();
const dirs = new Set<string>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Starts `redis-server` on a free loopback port: no persistence, a temporary directory. */
async function spawnServer(bin: string): Promise<RedisHandle> {
  const dir = mkdtempSync(join(tmpdir(), 'cg-redis-'));
  dirs.add(dir);
  const port = await freePort();
  let child: ChildProcess | undefined;
  let output = '';

  const start = async () => {
    if (child) return;
    // Someone may have taken the port while the server was down: retry briefly.
    for (let attempt = 0; ; attempt++) {
      output = '';
      const proc = spawn(
        bin,
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--save',
          '',
          '--appendonly',
          'no',
          '--dir',
          dir,
          '--daemonize',
          'no',
          '--logfile',
          '',
          '--loglevel',
          'warning',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      children.add(proc);
      let exitMessage: string | undefined;
      proc.stdout?.on('data', (d) => (output += String(d)));
      proc.stderr?.on('data', (d) => (output += String(d)));
      proc.on('error', (error) => (exitMessage = `could not start ${bin}: ${String(error)}`));
      proc.on('exit', (code, signal) => {
        children.delete(proc);
        exitMessage ??= `${bin} exited (code ${code}, signal ${signal}) on port ${port}:\n${output}`;
      });
      try {
        await waitForPing('127.0.0.1', port, 5_000, () => exitMessage);
        child = proc;
        return;
      } catch (error) {
        proc.kill('SIGKILL');
        if (attempt >= 5) throw error;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  };

  const stop = async () => {
    const proc = child;
    if (!proc) return;
    child = undefined;
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(timer);
  };

  await start();
  const command = (...args: string[]) => rawCommand('127.0.0.1', port, args);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    controllable: true,
    stop,
    start,
    pause: async (ms) => void (await command('CLIENT', 'PAUSE', String(Math.ceil(ms)), 'ALL')),
    unpause: async () => void (await command('CLIENT', 'UNPAUSE')),
    command,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
      dirs.delete(dir);
    },
  };
}

/** An existing server (REDIS_URL): usable, not ours to stop. */
function external(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  if (parsed.protocol !== 'redis:') throw new Error(`REDIS_URL must be redis://host:port (got ${url})`);
  if (parsed.password || parsed.username) {
    // The raw admin connection of this helper does not authenticate; keep the tests simple.
    throw new Error('REDIS_URL with credentials is not supported by the test helper: use a test server without AUTH');
  }
  return { host: parsed.hostname || '127.0.0.1', port: Number(parsed.port || 6379) };
}

async function externalHandle(url: string): Promise<RedisHandle> {
  const { host, port } = external(url);
  await waitForPing(host, port, 3_000, () => undefined).catch((error) => {
    throw new Error(`REDIS_URL=${url} is set but that Redis does not answer: ${String(error)}`);
  });
  const command = (...args: string[]) => rawCommand(host, port, args);
  const notOurs = async () => {
    throw new Error('this Redis comes from REDIS_URL: the tests do not stop it (ask for a controllable one)');
  };
  return {
    url,
    port,
    controllable: false,
    stop: notOurs,
    start: notOurs,
    pause: async (ms) => void (await command('CLIENT', 'PAUSE', String(Math.ceil(ms)), 'ALL')),
    unpause: async () => void (await command('CLIENT', 'UNPAUSE')),
    command,
    close: async () => {},
  };
}

/**
 * A TCP proxy in front of the Redis at `url`: stop() drops every connection and refuses new ones
 * (a stopped server, or a network partition, as clients see it) while the data stays intact;
 * start() lets clients in again. pause() stalls the server behind it.
 */
export async function startProxy(url: string): Promise<RedisHandle> {
  const target = await externalHandle(url);
  const { host, port: targetPort } = external(url);
  const port = await freePort();
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  const start = () =>
    new Promise<void>((resolve, reject) => {
      if (server) return resolve();
      const s = net.createServer((client) => {
        const upstream = net.connect({ host, port: targetPort });
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => {
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream).pipe(client);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        server = s;
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      const s = server;
      server = undefined;
      for (const socket of sockets) socket.destroy();
      if (!s) return resolve();
      s.close(() => resolve());
    });
  await start();
  return { ...target, url: `redis://127.0.0.1:${port}`, port, controllable: true, stop, start, close: stop };
}

/**
 * A Redis for a test file. `controllable`: one whose outage the test may cause (a server of our
 * own, or a proxy in front of REDIS_URL). Otherwise REDIS_URL when set, else a server of our own.
 * Throws (with instructions) when there is none: call `skipRedisTests` first for the skip policy.
 */
export async function startRedis(options: { controllable?: boolean } = {}): Promise<RedisHandle> {
  const url = process.env.REDIS_URL;
  const bin = redisServerBin();
  if (options.controllable) {
    if (bin) return spawnServer(bin);
    if (url) return startProxy(url);
  } else {
    if (url) return externalHandle(url);
    if (bin) return spawnServer(bin);
  }
  throw new Error(`context-guard: no Redis for the tests. ${HOW_TO_FIX}`);
}

/** A key prefix no other test run shares, so tests on one server never see each other's keys. */
export const uniquePrefix = (name: string) =>
  `cgtest:${name}:${process.pid}:${Date.now().toString(36)}:${Math.random().toString(36).slice(2, 8)}:`;

/** Deletes every key under `prefix` (SCAN, so it is safe on a shared server). */
export async function deletePrefix(handle: RedisHandle, prefix: string): Promise<void> {
  const { Redis } = await import('ioredis');
  const client = new Redis(handle.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length) await client.del(...keys);
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}
