// The docs stay followable: the README is a short front page (what it does, install, the commands,
// a quickstart per framework, links), and no page of README.md, BENCHMARKS.md or docs/*.md links to
// a file that does not exist or to a heading that is not there, so moving text between pages cannot
// leave a dead link behind.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const pages = [
  'README.md',
  'BENCHMARKS.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The text of a page outside its fenced code blocks (links in code are not links). */
function prose(file: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of readFileSync(join(root, file), 'utf8').split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (!fenced) out.push(line);
  }
  return out;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes; repeats get -1, -2. */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(file)) {
    const m = /^#{1,6} (.*)$/.exec(line);
    if (!m) continue;
    const base = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Every relative link and image of a page: [text](target) with no scheme. */
function links(file: string): Array<{ line: number; target: string }> {
  const out: Array<{ line: number; target: string }> = [];
  prose(file).forEach((line, i) => {
    for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) out.push({ line: i + 1, target });
    }
  });
  return out;
}

describe('docs', () => {
  it('keep the README a short front page', () => {
    const lines = readFileSync(join(root, 'README.md'), 'utf8').split('\n').length;
    expect(lines).toBeLessThan(350);
  });

  it('give the set-up and test commands exactly as CI (.ci/run) runs them', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const block = /## Set-up and tests\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
    const readmeCommands = (block ?? '').trim().split('\n');
    // .ci/run ends with the commands themselves, after preparing the machine (Node, Redis, Chromium).
    const ci = readFileSync(join(root, '.ci', 'run'), 'utf8')
      .trim()
      .split('\n');
    expect(readmeCommands).toEqual(['npm ci', 'npm test']);
    expect(ci.slice(-readmeCommands.length)).toEqual(readmeCommands);
  });

  it('link every docs page from the README', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const missing = pages.filter((p) => p.startsWith('docs/') && !readme.includes(`](${p}`));
    expect(missing).toEqual([]);
  });

  it('have no dead relative link or anchor', () => {
    const dead: string[] = [];
    for (const file of pages) {
      for (const { target } of links(file)) {
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const resolved = path ? normalize(join(dirname(file), path)) : file;
        if (resolved.startsWith('..') || !existsSync(join(root, resolved))) {
          dead.push(`${file}: ${target} (no file ${relative('.', resolved)})`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith('.md') && !anchors(resolved).has(anchor)) {
          dead.push(`${file}: ${target} (no heading #${anchor} in ${resolved})`);
        }
      }
    }
    expect(dead).toEqual([]);
  });
});
