// The walkthroughs of `npm run demo`, `npm run example:langchain` and `npm run example:compaction`
// (docs/ai-sdk.md, docs/langchain.md, docs/compaction.md) show what those commands print: this script runs the examples offline (their
// scripted models and summarizers, the repository snapshot of examples/repo-files.ts) and compares
// their output with the blocks, which it finds by a marker comment wherever they are (README.md or
// docs/*.md):
//
//   <!-- output: npm run demo -->
//   ```text
//   ...what examples/ai-sdk-agent.ts prints...
//   ```
//
//   node scripts/example-outputs.ts                      compare (exit 1 and a diff when they differ)
//   node scripts/example-outputs.ts --write              rewrite the blocks with what the examples print
//   node scripts/example-outputs.ts --refresh-snapshot   take the repository snapshot again, then --write
//
// The examples import the built package: `npm run build` first. test/examples.test.ts runs the
// comparison in `npm test`.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The commands whose output the docs show, and the example each one runs (after `npm run build`). */
export const EXAMPLES = [
  { command: 'npm run demo', file: 'examples/ai-sdk-agent.ts' },
  { command: 'npm run example:langchain', file: 'examples/langchain-agent.ts' },
  { command: 'npm run example:compaction', file: 'examples/compaction.ts' },
] as const;

/**
 * The output without what truly changes from run to run: the time in an archive batch's label
 * (`compaction-batch-<session>-<ISO time>`, the moment the compaction ran). Nothing else is
 * normalized: the examples' models, summarizers and files (a snapshot) are scripted.
 */
export function normalize(output: string): string {
  return output.replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, '<time>');
}

/** Runs an example offline (no provider key, the default window) and returns what it prints. */
export function runExample(file: string, extraEnv: Record<string, string> = {}): string {
  const env: Record<string, string | undefined> = { ...process.env, ...extraEnv };
  // A key or a window from the caller's shell would make the example leave its scripted model.
  for (const key of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'CONTEXT_WINDOW']) delete env[key];
  return execFileSync(process.execPath, [file], { cwd: ROOT, env, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
}

export interface OutputBlock {
  command: string;
  /** The Markdown file, relative to the repository root. */
  file: string;
  /** Character offsets of the block's content (between the fences) in the file. */
  start: number;
  end: number;
  text: string;
}

const MARKER = /<!-- output: (.+?) -->\n```text\n/g;

/** Every marked output block of README.md and docs/*.md. */
export function outputBlocks(): OutputBlock[] {
  const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`)].filter((f) =>
    f.endsWith('.md'),
  );
  const blocks: OutputBlock[] = [];
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    for (const m of text.matchAll(MARKER)) {
      const start = (m.index ?? 0) + m[0].length;
      const end = text.indexOf('\n```', start - 1);
      if (end < 0) throw new Error(`${file}: the output block of "${m[1]}" has no closing fence`);
      blocks.push({ command: m[1] as string, file, start, end: end + 1, text: text.slice(start, end + 1) });
    }
  }
  return blocks;
}

/** Rewrites one block with `output`. */
function writeBlock(block: OutputBlock, output: string): void {
  const path = join(ROOT, block.file);
  const text = readFileSync(path, 'utf8');
  writeFileSync(path, text.slice(0, block.start) + output + text.slice(block.end));
}

/** The first line where two texts differ, with its neighbours, for a readable failure. */
export function firstDifference(expected: string, actual: string): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] === b[i]) continue;
    return `line ${i + 1}:\n  docs:    ${JSON.stringify(a[i])}\n  printed: ${JSON.stringify(b[i])}`;
  }
  return 'no difference';
}

function main(): void {
  const args = process.argv.slice(2);
  const refresh = args.includes('--refresh-snapshot');
  const write = refresh || args.includes('--write');
  if (refresh) {
    rmSync(join(ROOT, 'examples/data/repo-snapshot.json'), { force: true });
    for (const { file } of EXAMPLES) runExample(file, { CONTEXT_GUARD_RECORD_SNAPSHOT: '1' });
  }
  let differ = 0;
  for (const { command, file } of EXAMPLES) {
    const blocks = outputBlocks().filter((b) => b.command === command);
    if (blocks.length === 0) throw new Error(`no <!-- output: ${command} --> block in README.md or docs/`);
    const output = runExample(file);
    // From the last block on: writing one moves the offsets of those after it in the same file.
    for (const block of blocks.reverse()) {
      if (normalize(block.text) === normalize(output)) continue;
      if (write) {
        writeBlock(block, output);
        console.log(`${block.file}: the output of ${command} rewritten`);
      } else {
        differ++;
        console.log(
          `${block.file}: the output of ${command} differs, ${firstDifference(normalize(block.text), normalize(output))}`,
        );
      }
    }
  }
  if (differ > 0) {
    console.log('node scripts/example-outputs.ts --write rewrites them (after npm run build).');
    process.exit(1);
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) main();
