// A real headless Chromium for the browser tests and the screenshot scripts: the system's own
// (Debian's `chromium` package, at /usr/bin/chromium; CHROMIUM_PATH points elsewhere), driven by
// playwright-core, which downloads no browser of its own. Each launch gets a fresh profile folder,
// removed on close, and flags that keep the browser off the network and quiet.
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** The one command that installs it (`.ci/run` runs it when Chromium is missing). */
export const INSTALL_CHROMIUM = 'apt-get install -y chromium';

export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The Chromium binary: CHROMIUM_PATH, else the first of the usual system paths that exists. */
export function chromiumPath(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  for (const candidate of candidates) {
    if (!candidate) continue;
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not there, try the next one
    }
  }
  return undefined;
}

export interface Browser {
  context: BrowserContext;
  newPage(viewport?: { width: number; height: number }): Promise<Page>;
  close(): Promise<void>;
}

/** Launches the system's Chromium, headless, with a fresh profile (`deviceScaleFactor` 2 for sharp screenshots). */
export async function launchBrowser(options: { deviceScaleFactor?: number } = {}): Promise<Browser> {
  const executablePath = chromiumPath();
  if (!executablePath)
    throw new Error(`No Chromium found (CHROMIUM_PATH, /usr/bin/chromium). Install it: ${INSTALL_CHROMIUM}`);
  const profile = mkdtempSync(join(tmpdir(), 'context-guard-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 800 },
    deviceScaleFactor: options.deviceScaleFactor ?? 1,
  });
  return {
    context,
    newPage: async (viewport) => {
      const page = await context.newPage();
      if (viewport) await page.setViewportSize(viewport);
      return page;
    },
    close: async () => {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
