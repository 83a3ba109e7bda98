// Every TypeScript block of the README and of the docs/*.md pages compiles as written, against the
// built package (npm test builds dist/ first), the way a user would paste it into a file of their own
// project, and runs when it needs no network or server. A block that is deliberately a fragment (a
// line of options, a shape) is fenced as ```ts fragment and skipped.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const dir = join(root, '.readme-check');

interface Block {
  /** The page, relative to the repository: README.md or docs/<page>.md. */
  file: string;
  line: number;
  code: string;
  /** A file name that says where the block is: README-line-45, docs-ai-sdk-line-120. */
  name: string;
}

/** The pages whose blocks are checked: the README and every docs/*.md page. */
const PAGES = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

/** The ```ts blocks of every page that are not marked as fragments, with the line each starts on. */
function blocks(): Block[] {
  const out: Block[] = [];
  for (const file of PAGES) {
    const lines = readFileSync(join(root, file), 'utf8').split('\n');
    const stem = file.replace(/\.md$/, '').replace(/[^A-Za-z0-9]+/g, '-');
    for (let i = 0; i < lines.length; i++) {
      if (lines[i]?.trim() !== '```ts') continue;
      const start = i + 1;
      let end = start;
      while (end < lines.length && lines[end]?.trim() !== '```') end++;
      out.push({ file, line: start + 1, code: lines.slice(start, end).join('\n'), name: `${stem}-line-${start + 1}` });
      i = end;
    }
  }
  return out;
}

describe('README and docs/*.md', () => {
  it('has TypeScript blocks that compile', () => {
    const found = blocks();
    expect(found.length).toBeGreaterThanOrEqual(25);
    // The README keeps a quickstart for each framework; the pages hold the rest.
    expect(found.filter((b) => b.file === 'README.md').length).toBeGreaterThanOrEqual(3);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const b of found) writeFileSync(join(dir, `${b.name}.ts`), `${b.code}\nexport {};\n`);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ extends: '../tsconfig.json', compilerOptions: { noEmit: true }, include: ['*.ts'] }),
    );
    let output = '';
    try {
      execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', join(dir, 'tsconfig.json')], {
        encoding: 'utf8',
        stdio: 'pipe',
      });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Each error names the page and line its block starts on (docs-options-line-N.ts).
    expect(output).toBe('');
  }, 120_000);

  it('has blocks that run, when they need no network or server', () => {
    // Blocks that call a provider (or Redis) are only compiled: tests make no network calls.
    const offline = blocks().filter(
      (b) => !/from '(@ai-sdk\/|@langchain\/(openai|anthropic|google)|context-guard\/redis|ioredis)/.test(b.code),
    );
    expect(offline.length).toBeGreaterThan(3);
    mkdirSync(dir, { recursive: true });
    try {
      for (const b of offline) {
        const file = join(dir, `run-${b.name}.ts`);
        writeFileSync(file, `${b.code}\nexport {};\n`);
        try {
          execFileSync(process.execPath, [file], { cwd: root, encoding: 'utf8', stdio: 'pipe', timeout: 30_000 });
        } catch (error) {
          const e = error as { stderr?: string; message?: string };
          throw new Error(`${b.file}: block at line ${b.line} failed to run:\n${e.stderr ?? e.message}`);
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
