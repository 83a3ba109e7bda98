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
