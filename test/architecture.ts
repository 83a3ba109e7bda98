// Reads the layout of src/ and adapters/ for test/architecture.test.ts: the imports of every file
// (`import type`, re-exports and dynamic imports included), the files' places, the functions biome
// finds over 60 lines and the calls passing `true` or `false`. `node test/architecture.ts` prints
// what each rule finds today, in the form of the test's lists of known offenders.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, normalize, relative } from 'node:path';
import { parseSync } from 'rolldown/utils';

const root = join(import.meta.dirname, '..');
const FOLDERS = ['src', 'adapters'];
/** Callees whose boolean argument is a value, not a flag: zod's `z.literal(false)`, a Map's `set(key, true)`. */
const BOOLEAN_VALUE_CALLEES = new Set(['literal', 'set']);

// --- reading the code ---------------------------------------------------------------------------

function tsFiles(folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(folder, f).split('\\').join('/'))
    .sort();
}

export const files = FOLDERS.flatMap(tsFiles);
const parsed = new Map(
  files.map((file) => {
    const text = readFileSync(join(root, file), 'utf8');
    return [file, { text, result: parseSync(file, text, { lang: 'ts' }) }] as const;
  }),
);

/** Every module a file names: imports, `import type`, re-exports, `export type *`, dynamic imports. */
function specifiers(file: string): string[] {
  const { text, result } = parsed.get(file)!;
  const out = result.module.staticImports.map((i) => i.moduleRequest.value);
  for (const e of result.module.staticExports)
    for (const entry of e.entries) if (entry.moduleRequest) out.push(entry.moduleRequest.value);
  for (const d of result.module.dynamicImports) {
    const literal = /^\s*['"`]([^'"`]+)['"`]\s*$/.exec(text.slice(d.moduleRequest.start, d.moduleRequest.end));
    if (literal) out.push(literal[1]!);
  }
  return out;
}

/** The repository files a file imports (relative specifiers, resolved), and the packages it names. */
export function importsOf(file: string): { local: string[]; packages: string[] } {
  const local: string[] = [];
  const packages: string[] = [];
  for (const s of specifiers(file)) {
    if (s.startsWith('.'))
      local.push(
        normalize(join(dirname(file), s))
          .split('\\')
          .join('/'),
      );
    else packages.push(s);
  }
  return { local: [...new Set(local)], packages: [...new Set(packages)] };
}

export const graph = new Map(files.map((f) => [f, importsOf(f).local.filter((to) => parsed.has(to))]));

/** Strongly connected groups of more than one file, or a file importing itself (Tarjan). */
export function cycles(): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || graph.get(v)!.includes(v)) out.push(group.sort());
  };
  for (const v of files) if (!index.has(v)) visit(v);
  return out.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** Pairs of files of one name, one in a folder and one in a folder directly inside it. */
export function sameNames(): string[][] {
  const out: string[][] = [];
  for (const file of files) {
    if (basename(file) === 'index.ts') continue;
    const above = join(dirname(dirname(file)), basename(file))
      .split('\\')
      .join('/');
    if (dirname(file) !== '.' && parsed.has(above)) out.push([above, file]);
  }
  return out.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

// --- function lengths, measured by biome --------------------------------------------------------

interface Node {
  type: string;
  start: number;
  end: number;
  [key: string]: unknown;
}

const FUNCTION_TYPES = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression']);

function keyName(key: unknown): string {
  const k = key as { name?: string; value?: unknown } | undefined;
  return k?.name ?? String(k?.value ?? '[computed]');
}

/** Every function of a file with the offset it starts at and a readable name (`Class.method`, `outer>inner`). */
export function functionsOf(file: string): Array<{ start: number; end: number; name: string }> {
  const out: Array<{ start: number; end: number; name: string }> = [];
  const walk = (node: unknown, scope: string, className: string, ownName?: string): void => {
    if (Array.isArray(node)) {
      for (const child of node) walk(child, scope, className);
      return;
    }
    if (!node || typeof node !== 'object' || typeof (node as Node).type !== 'string') return;
    const n = node as Node;
    let name = scope;
    if (FUNCTION_TYPES.has(n.type)) {
      const own = n.type === 'FunctionDeclaration' ? keyName(n.id) : ownName;
      name = own ? (scope ? `${scope}>${own}` : own) : `${scope || '(top)'}>(anonymous)`;
      out.push({ start: n.start, end: n.end, name });
    }
    // A method's span starts at its name (where biome points), before the function value's `(`.
    if (n.type === 'MethodDefinition') {
      const own = `${className}.${keyName(n.key)}`;
      out.push({ start: n.start, end: n.end, name: scope ? `${scope}>${own}` : own });
    }
    const cls = n.type === 'ClassDeclaration' || n.type === 'ClassExpression' ? keyName(n.id) : className;
    for (const [field, child] of Object.entries(n)) {
      if (field === 'type' || field === 'start' || field === 'end') continue;
      let childName: string | undefined;
      if (n.type === 'MethodDefinition' || n.type === 'PropertyDefinition') childName = `${cls}.${keyName(n.key)}`;
      else if (n.type === 'VariableDeclarator' || n.type === 'Property')
        childName = keyName(n.type === 'Property' ? n.key : n.id);
      walk(child, name, cls, field === 'value' || field === 'init' ? childName : undefined);
    }
  };
  walk(parsed.get(file)!.result.program, '', '');
  return out;
}

function offsetOf(text: string, line: number, column: number): number {
  let offset = 0;
  for (let l = 1; l < line; l++) offset = text.indexOf('\n', offset) + 1;
  return offset + column - 1;
}

/** `file: name` of every function biome finds over 60 lines in src/ and adapters/, all files included. */
export function longFunctions(): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'cg-architecture-'));
  try {
    const rules = { complexity: { noExcessiveLinesPerFunction: lengthRule() } };
    const config = { root: true, vcs: { enabled: false }, formatter: { enabled: false }, assist: { enabled: false } };
    writeFileSync(
      join(dir, 'biome.json'),
      JSON.stringify({ ...config, linter: { enabled: true, rules: { preset: 'none', ...rules } } }),
    );
    const biome = join(root, 'node_modules', '.bin', 'biome');
    let output: string;
    try {
      output = execFileSync(
        biome,
        ['lint', `--config-path=${dir}`, '--reporter=json', '--max-diagnostics=none', ...FOLDERS],
        {
          cwd: root,
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        },
      );
    } catch (error) {
      output = (error as { stdout: string }).stdout;
    }
    const report = JSON.parse(output) as {
      diagnostics: Array<{ category: string; location: { path: string; start: { line: number; column: number } } }>;
    };
    return report.diagnostics
      .filter((d) => d.category === 'lint/complexity/noExcessiveLinesPerFunction')
      .map(({ location: { path, start } }) => {
        const file = relative(root, join(root, path)).split('\\').join('/');
        const at = offsetOf(parsed.get(file)!.text, start.line, start.column);
        const fn = functionsOf(file)
          .filter((f) => f.start <= at && at < f.end)
          .sort((a, b) => b.start - a.start)[0];
        return `${file}: ${fn?.name ?? `line ${start.line}`}`;
      })
      .sort();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface BiomeConfig {
  overrides?: Array<{ includes: string[]; linter?: { rules?: { complexity?: Record<string, unknown> } } }>;
}
export const biomeConfig = JSON.parse(readFileSync(join(root, 'biome.json'), 'utf8')) as BiomeConfig;

/** The function-length rule as biome.json sets it for src/ and adapters/. */
export function lengthRule(): unknown {
  return biomeConfig.overrides?.find((o) => o.includes.includes('src/**'))?.linter?.rules?.complexity
    ?.noExcessiveLinesPerFunction;
}

/** `file: callee` of every call in src/ and adapters/ with a `true` or `false` literal argument. */
export function booleanArguments(): string[] {
  const out: string[] = [];
  const walk = (file: string, node: unknown): void => {
    if (Array.isArray(node)) {
      for (const child of node) walk(file, child);
      return;
    }
    if (!node || typeof node !== 'object') return;
    const n = node as Node;
    if (n.type === 'CallExpression' || n.type === 'NewExpression') {
      const callee = n.callee as Node & { name?: string; property?: { name?: string } };
      const name = callee.name ?? callee.property?.name ?? '(expression)';
      const args = n.arguments as Array<{ type: string; value?: unknown }>;
      if (!BOOLEAN_VALUE_CALLEES.has(name) && args.some((a) => a.type === 'Literal' && typeof a.value === 'boolean'))
        out.push(`${file}: ${name}`);
    }
    for (const [field, child] of Object.entries(n)) if (field !== 'type') walk(file, child);
  };
  for (const file of files) walk(file, parsed.get(file)!.result.program);
  return [...new Set(out)].sort();
}

/** The `.ts` files directly in src/. */
export function looseFiles(): string[] {
  return readdirSync(join(root, 'src'), { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => e.name)
    .sort();
}

/** Imports that cross the layers: an adapter into src/ but its index.ts, the core into adapters/ or a framework. */
export function layerOffenders(): string[] {
  const offenders: string[] = [];
  for (const file of files) {
    const { local, packages } = importsOf(file);
    if (file.startsWith('adapters/'))
      for (const to of local) if (to.startsWith('src/') && to !== 'src/index.ts') offenders.push(`${file} → ${to}`);
    if (file.startsWith('src/')) {
      for (const to of local) if (!to.startsWith('src/')) offenders.push(`${file} → ${to}`);
      for (const p of packages)
        if (p === 'ai' || p.startsWith('@ai-sdk/') || p.startsWith('@langchain/') || p === 'langchain')
          offenders.push(`${file} → ${p}`);
    }
  }
  return offenders;
}

// --- layers ------------------------------------------------------------------------------------------

/**
 * The core's layers, top first, as docs/ARCHITECTURE.md draws them: a value import goes to the same
 * layer or one below (type-only imports may point up: public shapes named where they are used).
 */
export const LAYERS: string[][] = [
  ['index.ts'],
  ['guard.ts'],
  ['call/'],
  ['compaction/compaction.ts', 'api.ts', 'config.ts', 'subscriptions.ts'],
  ['archive/'],
  ['compaction/'],
  ['tokens/'],
  ['state/'],
  ['events.ts', 'messages.ts'],
];

/** The layer of a file of src/: its own name when a layer names it, else its folder's. */
function layerOf(file: string): number {
  const path = file.slice('src/'.length);
  const folder = path.includes('/') ? `${path.slice(0, path.indexOf('/'))}/` : path;
  const own = LAYERS.findIndex((layer) => layer.includes(path));
  return own >= 0 ? own : LAYERS.findIndex((layer) => layer.includes(folder));
}

/** Value imports of src/ that go up the layers, or from or to a file no layer holds. */
export function upwardValueImports(): string[] {
  const out: string[] = [];
  for (const file of files) {
    if (!file.startsWith('src/')) continue;
    const { result } = parsed.get(file)!;
    const requests = result.module.staticImports
      .filter((i) => i.entries.length === 0 || i.entries.some((e) => !e.isType))
      .map((i) => i.moduleRequest.value);
    for (const e of result.module.staticExports)
      for (const entry of e.entries) if (entry.moduleRequest && !entry.isType) requests.push(entry.moduleRequest.value);
    for (const request of requests) {
      if (!request.startsWith('.')) continue;
      const to = normalize(join(dirname(file), request))
        .split('\\')
        .join('/');
      const [from, into] = [layerOf(file), layerOf(to)];
      if (from < 0 || into < 0 || into < from) out.push(`${file} → ${to}`);
    }
  }
  return [...new Set(out)].sort();
}

// --- docs/ARCHITECTURE.md against the code ---------------------------------------------------------

/** The folders of the repository a newcomer meets (test/ mirrors src/ and adapters/: its own are not listed). */
export function folders(): string[] {
  const out = new Set<string>();
  for (const top of ['src', 'adapters', 'cli', 'bench', 'examples', 'scripts', 'docs', 'test']) {
    out.add(top);
    if (top === 'test') continue;
    for (const entry of readdirSync(join(root, top), { recursive: true, withFileTypes: true }))
      if (entry.isDirectory() && !entry.name.startsWith('.'))
        out.add(relative(root, join(entry.parentPath, entry.name)).split('\\').join('/'));
  }
  return [...out].sort();
}

const architecture = (): string => readFileSync(join(root, 'docs', 'ARCHITECTURE.md'), 'utf8');

/** Folders docs/ARCHITECTURE.md does not name (as `path/`, or its last parts followed by `/`). */
export function unnamedFolders(): string[] {
  const doc = architecture();
  return folders().filter((folder) => {
    const parts = folder.split('/');
    return !parts.some((_, i) => doc.includes(`${parts.slice(i).join('/')}/`));
  });
}

/** Every tracked-looking file of the repository, as a path from its root. */
function repositoryFiles(): string[] {
  const out: string[] = [];
  for (const top of ['src', 'adapters', 'cli', 'bench', 'examples', 'scripts', 'docs', 'test'])
    for (const entry of readdirSync(join(root, top), { recursive: true, withFileTypes: true }))
      if (entry.isFile()) out.push(relative(root, join(entry.parentPath, entry.name)).split('\\').join('/'));
  return out;
}

/** `.ts` files docs/ARCHITECTURE.md names (whole paths or their last parts) that no file of the repository is. */
export function staleFileNames(): string[] {
  const known = repositoryFiles();
  const named = new Set(architecture().match(/[\w./-]*[\w-]+\.ts\b/g) ?? []);
  return [...named].filter((name) => !known.some((file) => file === name || file.endsWith(`/${name}`))).sort();
}

if (import.meta.main) {
  const today = {
    KNOWN_CYCLES: cycles(),
    KNOWN_LOOSE_FILES: looseFiles(),
    KNOWN_SAME_NAMES: sameNames(),
    KNOWN_BOOLEAN_ARGUMENTS: booleanArguments(),
    KNOWN_LONG_FUNCTIONS: longFunctions(),
    layerOffenders: layerOffenders(),
    upwardValueImports: upwardValueImports(),
    unnamedFolders: unnamedFolders(),
    staleFileNames: staleFileNames(),
  };
  console.log(JSON.stringify(today, null, 2));
}
