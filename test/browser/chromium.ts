// Whether the browser tests can run, decided when a test file loads, as for the Redis tests
// (test/adapters/redis/server.ts): without a Chromium they FAIL, naming the one command that installs
// it; a skip is available only outside CI and only when asked for (CONTEXT_GUARD_SKIP_BROWSER=1),
// logged on stderr. `.ci/run` installs Chromium from Debian's packages when it is missing.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromiumPath, INSTALL_CHROMIUM } from '../../scripts/browser.ts';
import { inCI } from '../adapters/redis/server.ts';

const truthy = (value: string | undefined) =>
  value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false';

/** Returns `true` to skip (only when asked, outside CI, and logged); throws when no Chromium can be had. */
export function skipBrowserTests(file: string): boolean {
  if (chromiumPath() !== undefined) return false;
  const why = `context-guard: no Chromium for ${file} (CHROMIUM_PATH, /usr/bin/chromium).`;
  const fix = `Install it: \`${INSTALL_CHROMIUM}\` (Debian/Ubuntu), or point CHROMIUM_PATH at a Chromium or Chrome. \`.ci/run\` does this itself.`;
  if (!inCI && truthy(process.env.CONTEXT_GUARD_SKIP_BROWSER)) {
    process.stderr.write(
      `\n*** SKIPPED: ${why}\n*** CONTEXT_GUARD_SKIP_BROWSER is set: the browser tests of ${file} do NOT run. ${fix}\n\n`,
    );
    return true;
  }
  throw new Error(
    `${why}\n${fix}\n` +
      (inCI
        ? 'CI=true: the browser tests never skip in CI.'
        : 'To skip them on this machine on purpose (never in CI), set CONTEXT_GUARD_SKIP_BROWSER=1.'),
  );
}

/** The browser tests' output folder (screenshots, measurements): test-results/browser, not tracked. */
export function outputDir(): string {
  const dir = join(import.meta.dirname, '..', '..', 'test-results', 'browser');
  mkdirSync(dir, { recursive: true });
  return dir;
}
