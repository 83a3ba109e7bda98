// The layout rules of docs/ARCHITECTURE.md, read from the code: the imports of every file of src/
// and adapters/ (`import type`, re-exports and dynamic imports included), the files' places, and
// the length of every function (biome's noExcessiveLinesPerFunction, the rule `npm run lint` runs).
//
// A rule that today's code does not keep yet has its offenders listed below. Each list may only
// shrink: the test fails when a new offender appears, and also when a listed one is gone, until it
// is taken off the list. The lists are meant to end empty.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, normalize, relative } from 'node:path';
import { parseSync } from 'rolldown/utils';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const FOLDERS = ['src', 'adapters'];

/** Import cycles (type-level ones too), each as the sorted files of one strongly connected group. */
const KNOWN_CYCLES: string[][] = [
  // Type-level: config.ts → compaction/summarize.ts → compaction/work.ts → config.ts.
  ['src/compaction/summarize.ts', 'src/compaction/work.ts', 'src/config.ts'],
];

/** The loose files of src/ while there are more than MAX_LOOSE_FILES of them (to move into stage folders). */
const MAX_LOOSE_FILES = 8;
const KNOWN_LOOSE_FILES: string[] = [
  'api.ts',
  'call.ts',
  'compact.ts',
  'config.ts',
  'events.ts',
  'guard.ts',
  'index.ts',
  'messages.ts',
  'overflow.ts',
  'prepare.ts',
  'record.ts',
  'safety.ts',
  'subscriptions.ts',
  'usage.ts',
];

/** Files that share a name with a file of the folder above or below them (`index.ts` excepted). */
const KNOWN_SAME_NAMES: string[][] = [
  ['src/compaction/prune.ts', 'src/compaction/steps/prune.ts'],
  ['src/compaction/summarize.ts', 'src/compaction/steps/summarize.ts'],
];

/** Functions over 60 lines, as `file: name` (biome turns the rule off for these files in biome.json). */
const KNOWN_LONG_FUNCTIONS: string[] = [
  'src/compact.ts: pipelineInput',
  'src/compaction/mechanical.ts: mechanicalDigest',
  'src/compaction/steps/summarize.ts: gather',
  'src/compaction/steps/summarize.ts: writeSummary',
  'src/compaction/summarize.ts: summarizeRaw',
  'src/config.ts: resolveOptions',
  'src/record.ts: recordCall',
  'src/tokens/prompt-measure.ts: MessageKeys.push',
  'src/tokens/prompt-measure.ts: PromptMeasurer.run',
];

/**
 * Calls that pass `true` or `false` as an argument, as `file: callee` (an options object or two
 * functions say what the flag means; zod's `z.literal(false)` and a Map's `set(key, true)` are values).
 */
const KNOWN_BOOLEAN_ARGUMENTS: string[] = [
  'src/compaction/redact.ts: redactRecord',
  'src/compaction/steps/last-resort.ts: smallestPrompt',
  'src/guard.ts: recordCall',
  'src/prepare.ts: fits',
  'src/prepare.ts: renderView',
  'src/prepare.ts: repairToolPairing',
  'src/safety.ts: check',
  'src/state/repository.ts: withStore',
  'src/tokens/prompt-measure.ts: run',
];
const BOOLEAN_VALUE_CALLEES = new Set(['literal', 'set']);

// --- reading the code ---------------------------------------------------------------------------

function tsFiles(folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(folder, f).split('\\').join('/'))
    .sort();
}

const files = FOLDERS.flatMap(tsFiles);
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
function importsOf(file: string): { local: string[]; packages: string[] } {
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

const graph = new Map(files.map((f) => [f, importsOf(f).local.filter((to) => parsed.has(to))]));

/** Strongly connected groups of more than one file, or a file importing itself (Tarjan). */
function cycles(): string[][] {
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
function sameNames(): string[][] {
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
function functionsOf(file: string): Array<{ start: number; end: number; name: string }> {
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
function longFunctions(): string[] {
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
const biomeConfig = JSON.parse(readFileSync(join(root, 'biome.json'), 'utf8')) as BiomeConfig;

/** The function-length rule as biome.json sets it for src/ and adapters/. */
function lengthRule(): unknown {
  return biomeConfig.overrides?.find((o) => o.includes.includes('src/**'))?.linter?.rules?.complexity
    ?.noExcessiveLinesPerFunction;
}

/** `file: callee` of every call in src/ and adapters/ with a `true` or `false` literal argument. */
function booleanArguments(): string[] {
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

// --- the rules ----------------------------------------------------------------------------------

describe('architecture', () => {
  it('reads the imports of every file (a sanity check of the reader itself)', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(graph.get('src/index.ts')).toContain('src/guard.ts');
    // `export type *` and `import type` count as imports.
    expect(graph.get('src/index.ts')).toContain('src/events.ts');
    expect(functionsOf('src/index.ts')).toEqual([]);
  });

  it('has no import cycle in src/ and adapters/, type-level ones included, beyond the known ones', () => {
    expect(
      cycles(),
      'KNOWN_CYCLES (test/architecture.test.ts) lists the known offenders: a new one must be fixed, a fixed one taken off the list',
    ).toEqual(KNOWN_CYCLES);
  });

  it('adapters import only the public core (src/index.ts), and the core no adapter or framework', () => {
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
    expect(offenders).toEqual([]);
  });

  it(`has at most ${MAX_LOOSE_FILES} loose files in src/, beyond the known ones`, () => {
    const loose = readdirSync(join(root, 'src'), { withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith('.ts'))
      .map((e) => e.name)
      .sort();
    if (loose.length > MAX_LOOSE_FILES)
      expect(
        loose,
        'KNOWN_LOOSE_FILES (test/architecture.test.ts) lists the known offenders: a new one must be fixed, a fixed one taken off the list',
      ).toEqual(KNOWN_LOOSE_FILES);
    else expect(KNOWN_LOOSE_FILES, 'src/ is within the limit: empty KNOWN_LOOSE_FILES').toEqual([]);
  });

  it('has no two files of one name in a folder and a folder directly inside it, beyond the known ones', () => {
    expect(
      sameNames(),
      'KNOWN_SAME_NAMES (test/architecture.test.ts) lists the known offenders: a new one must be fixed, a fixed one taken off the list',
    ).toEqual(KNOWN_SAME_NAMES);
  });

  it('passes no positional `true` or `false` to a function, beyond the known ones', () => {
    expect(
      booleanArguments(),
      'KNOWN_BOOLEAN_ARGUMENTS (test/architecture.test.ts) lists the known offenders: a new one must be fixed, a fixed one taken off the list',
    ).toEqual(KNOWN_BOOLEAN_ARGUMENTS);
  });

  it('has no function over 60 lines in src/ and adapters/, beyond the known ones', () => {
    expect(lengthRule()).toEqual({ level: 'error', options: { maxLines: 60 } });
    expect(
      longFunctions(),
      'KNOWN_LONG_FUNCTIONS (test/architecture.test.ts) lists the known offenders: a new one must be fixed, a fixed one taken off the list',
    ).toEqual(KNOWN_LONG_FUNCTIONS);
    // biome.json turns the rule off for exactly the files that still hold a known one.
    const off = biomeConfig.overrides?.find(
      (o) => o.linter?.rules?.complexity?.noExcessiveLinesPerFunction === 'off',
    )?.includes;
    expect(
      [...(off ?? [])].sort(),
      'the biome.json override that turns noExcessiveLinesPerFunction off lists the files of KNOWN_LONG_FUNCTIONS',
    ).toEqual([...new Set(KNOWN_LONG_FUNCTIONS.map((f) => f.split(':')[0]!))].sort());
  });
});
