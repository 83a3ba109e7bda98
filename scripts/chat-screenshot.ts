// A screenshot of the chat example (examples/chat) after a compaction, taken in the system's
// headless Chromium, for the README:
//
//   node scripts/chat-screenshot.ts --out docs/chat-meter.png [--messages 10]
//
// It writes only where --out says (no default: a tracked file is never overwritten unless named).
// The page is driven as a user would: each message typed and sent, the answer waited for, the meter
// read; test/browser/chat.test.ts drives it the same way (sendAndRead).
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { startChatServer } from '../examples/chat/server.ts';
import { launchBrowser } from './browser.ts';

/** What the page shows after one answer. */
export interface Reading {
  message: number;
  /** The meter's fraction of the window (its data-fraction). */
  fraction: number;
  /** The meter's text (it holds the percentage). */
  text: string;
  /** The compaction entries' texts. */
  compactions: string[];
}

/** Types and sends message `n`, waits for its answer, and reads the meter and the compactions. */
export async function sendAndRead(page: Page, n: number): Promise<Reading> {
  await page.getByTestId('chat-input').fill(`Question ${n}: what comes next in the plan?`);
  await page.getByTestId('chat-send').click();
  await page.waitForFunction(
    (count) =>
      document.querySelectorAll('[data-testid="chat-message"]').length === count &&
      document.body.dataset.status === 'ready',
    2 * n,
  );
  await page.waitForSelector('[data-testid="context-meter"][data-fraction]');
  const meter = page.getByTestId('context-meter');
  return {
    message: n,
    fraction: Number(await meter.getAttribute('data-fraction')),
    text: (await meter.textContent()) ?? '',
    compactions: await page.getByTestId('context-compaction').allTextContents(),
  };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const out = flag('--out');
  if (!out) {
    console.error('usage: node scripts/chat-screenshot.ts --out <file.png> [--messages 10]');
    process.exit(2);
  }
  const messages = Number(flag('--messages') ?? 10);
  const [server, browser] = await Promise.all([startChatServer({ port: 0, delayMs: 0 }), launchBrowser()]);
  try {
    const page = await browser.newPage({ width: 1280, height: 800 });
    await page.goto(server.url);
    let last: Reading | undefined;
    for (let n = 1; n <= messages; n++) last = await sendAndRead(page, n);
    mkdirSync(dirname(out), { recursive: true });
    await page.screenshot({ path: out });
    console.log(
      `wrote ${out}: ${messages} messages, meter ${Math.round((last?.fraction ?? 0) * 100)}%, ${last?.compactions.length ?? 0} compaction(s)`,
    );
  } finally {
    await browser.close();
    await server.close();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
