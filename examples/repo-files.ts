// The files the example agents read (examples/ai-sdk-agent.ts, examples/langchain-agent.ts): this
// repository's own, through `list_files` and `read_file`.
//
// A real model reads the live repository. The offline scripted models read a snapshot of it
// (examples/data/repo-snapshot.json: what each of their tool calls returned when it was taken), so
// that an offline run prints the same bytes on every machine and after every change to the sources:
// docs/ai-sdk.md and docs/langchain.md show that output, and test/examples.test.ts checks that it is
// what the examples print.
// A change to the library's behaviour still shows (the snapshot is the input, not the output).
//
// To take the snapshot again (the files changed a lot, or a script reads a new file):
//   npm run build && node scripts/example-outputs.ts --refresh-snapshot
// which runs both examples against the live repository, records what their tools returned, and
// rewrites those output blocks.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const READ_LIMIT = 6_000;
const SKIP = new Set(['node_modules', 'dist', 'coverage', '.git']);
const n = (x: number) => Math.round(x).toLocaleString('en-US');

const SNAPSHOT_PATH = join(dirname(fileURLToPath(import.meta.url)), 'data', 'repo-snapshot.json');
/** Set by scripts/example-outputs.ts --refresh-snapshot: read the live files and record them. */
const RECORD = process.env.CONTEXT_GUARD_RECORD_SNAPSHOT === '1';

interface Snapshot {
  /** list_files answers, by directory. */
  list: Record<string, string>;
  /** read_file answers, by `path@offset`. */
  read: Record<string, string>;
}

/** The nearest folder, from the working directory up, whose package.json is this package's. */
function findRepoRoot(from: string): string {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    try {
      if ((JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown }).name === 'context-guard')
        return dir;
    } catch {
      // no package.json here
    }
    if (dirname(dir) === dir) return resolve(from);
  }
}

/** The live repository: list_files and read_file on its real files. */
function live(root: string) {
  /** A path inside the repository, or an error the model sees as the tool's result. */
  const inRepo = (path: string): string => {
    const full = resolve(root, path);
    if (full !== root && !full.startsWith(root + sep)) throw new Error(`${path} is outside the repository`);
    return full;
  };
  return {
    list(dir: string): string {
      const lines: string[] = [];
      const walk = (full: string) => {
        for (const entry of readdirSync(full, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
          if (entry.name.startsWith('.') || SKIP.has(entry.name)) continue;
          const path = join(full, entry.name);
          if (entry.isDirectory()) walk(path);
          else if (lines.length < 200) lines.push(`${relative(root, path)} (${n(statSync(path).size)} bytes)`);
        }
      };
      walk(inRepo(dir));
      return lines.join('\n') || `${dir}: no files`;
    },
    read(path: string, offset = 0): string {
      const text = readFileSync(inRepo(path), 'utf8');
      const chunk = text.slice(offset, offset + READ_LIMIT);
      const rest = text.length - offset - chunk.length;
      return rest > 0
        ? `${chunk}\n[... ${n(rest)} more characters: read_file with offset ${offset + chunk.length}]`
        : chunk;
    },
  };
}

export interface RepoFiles {
  /** What the tools read, for the example's header. */
  source: string;
  /** The last answer of list_files or read_file: what the model asked for last. */
  last?: string;
  /** list_files: the files under a directory, with their sizes. */
  list(dir: string): string;
  /** read_file: at most READ_LIMIT characters from `offset`. */
  read(path: string, offset?: number): string;
}

/** The repository's files: live, or (`snapshot`) as the snapshot recorded them. */
export function repoFiles(snapshot: boolean): RepoFiles {
  const files = source(snapshot);
  const remembered: RepoFiles = {
    source: files.source,
    list: (dir) => (remembered.last = files.list(dir)),
    read: (path, offset) => (remembered.last = files.read(path, offset)),
  };
  return remembered;
}

function source(snapshot: boolean): RepoFiles {
  const root = findRepoRoot(process.cwd());
  const files = live(root);
  if (!snapshot) return { source: `repository: ${root}`, ...files };
  if (RECORD) {
    const recorded: Snapshot = { list: {}, read: {} };
    try {
      Object.assign(recorded, JSON.parse(readFileSync(SNAPSHOT_PATH, 'utf8')) as Snapshot);
    } catch {
      // a first snapshot
    }
    const save = () => writeFileSync(SNAPSHOT_PATH, `${JSON.stringify(recorded, null, 2)}\n`);
    return {
      source: 'files: a snapshot of this repository (examples/data/repo-snapshot.json), being recorded',
      list: (dir) => {
        recorded.list[dir] = files.list(dir);
        save();
        return recorded.list[dir];
      },
      read: (path, offset = 0) => {
        const key = `${path}@${offset}`;
        recorded.read[key] = files.read(path, offset);
        save();
        return recorded.read[key];
      },
    };
  }
  const taken = JSON.parse(readFileSync(SNAPSHOT_PATH, 'utf8')) as Snapshot;
  const missing = (what: string) =>
    new Error(`${what} is not in the snapshot: node scripts/example-outputs.ts --refresh-snapshot takes it again`);
  return {
    source:
      'files: a snapshot of this repository (examples/data/repo-snapshot.json), so this output is the same on every run',
    list: (dir) => {
      const answer = taken.list[dir];
      if (answer === undefined) throw missing(`list_files ${dir}`);
      return answer;
    },
    read: (path, offset = 0) => {
      const answer = taken.read[`${path}@${offset}`];
      if (answer === undefined) throw missing(`read_file ${path} @${offset}`);
      return answer;
    },
  };
}
