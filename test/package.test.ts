// The published entry points load in both module systems (npm test builds dist/ first).
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const run = (args: string[]): string => execFileSync(process.execPath, args, { encoding: 'utf8' }).trim();

describe('package exports', () => {
  it.each(['context-guard', 'context-guard/ai-sdk', 'context-guard/langchain'])(
    '%s loads with require and import',
    (entry) => {
      expect(run(['-e', `console.log(typeof require(${JSON.stringify(entry)}).createContextGuard)`])).toBe('function');
      expect(
        run([
          '--input-type=module',
          '-e',
          `const m = await import(${JSON.stringify(entry)}); console.log(typeof m.createContextGuard)`,
        ]),
      ).toBe('function');
    },
  );

  it('context-guard/redis loads with require and import without opening a connection', () => {
    const check = "console.log(typeof m.RedisStore + ':' + new m.RedisStore({ url: 'redis://127.0.0.1:1' }).prefix)";
    expect(run(['-e', `const m = require('context-guard/redis'); ${check}`])).toBe('function:cg:');
    expect(run(['--input-type=module', '-e', `const m = await import('context-guard/redis'); ${check}`])).toBe(
      'function:cg:',
    );
  });

  it('raises ContextGuardConfigError from the CommonJS build too', () => {
    const out = run([
      '-e',
      "const { createContextGuard } = require('context-guard'); try { createContextGuard({ contextWindow: 0 }) } catch (e) { console.log(e.name + ':' + e.field) }",
    ]);
    expect(out).toBe('ContextGuardConfigError:contextWindow');
  });
});

describe('the published tarball', () => {
  it('holds the ESM and CommonJS builds with their types, LICENSE and README, and nothing else', () => {
    // npm test has built dist/ already: --ignore-scripts skips prepack's second build.
    const [pack] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { encoding: 'utf8' }),
    ) as Array<{ files: Array<{ path: string }> }>;
    const files = (pack?.files ?? []).map((f) => f.path).sort();
    for (const required of [
      'LICENSE',
      'README.md',
      'package.json',
      'dist/esm/src/index.js',
      'dist/esm/src/index.d.ts',
      'dist/cjs/src/index.js',
      'dist/cjs/src/index.d.ts',
      'dist/cjs/package.json',
      'dist/esm/adapters/ai-sdk/index.js',
      'dist/cjs/adapters/langchain/index.js',
      'dist/esm/adapters/redis/index.d.ts',
    ])
      expect(files, required).toContain(required);
    // Every file is a build output or one of the three documents: no sources, tests or source maps
    // pointing at files that do not ship.
    const stray = files.filter(
      (f) => !['LICENSE', 'README.md', 'package.json'].includes(f) && !/^dist\/(esm|cjs)\/.+\.(js|d\.ts|json)$/.test(f),
    );
    expect(stray).toEqual([]);
  });
});
