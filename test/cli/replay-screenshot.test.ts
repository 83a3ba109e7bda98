// scripts/replay-screenshot.ts never writes where it was not told to: without --out it prints its
// usage, and over an existing file (the README's tracked image) it refuses without --force. Both
// answers come before any browser starts.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const fixture = join(root, 'test', 'cli', 'fixtures', 'ai-sdk.json');

function run(args: string[]): { code: number; stderr: string } {
  try {
    execFileSync(process.execPath, [join(root, 'scripts', 'replay-screenshot.ts'), ...args], {
      cwd: root,
      encoding: 'utf8',
      stdio: 'pipe',
    });
    return { code: 0, stderr: '' };
  } catch (error) {
    const e = error as { status?: number; stderr?: string };
    return { code: e.status ?? -1, stderr: e.stderr ?? '' };
  }
}

describe('replay:screenshot', () => {
  it('writes nothing without --out', () => {
    const r = run([fixture, '--window', '4000']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/usage: .*--out <file\.png>/);
  });

  it('leaves an existing file (the tracked README image) alone without --force', () => {
    const image = join(root, 'docs', 'replay-chart.png');
    const before = readFileSync(image);
    const r = run([fixture, '--window', '4000', '--out', image]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/exists: pass --force/);
    expect(readFileSync(image).equals(before)).toBe(true);
  });
});
