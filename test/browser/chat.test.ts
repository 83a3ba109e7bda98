// The chat example (examples/chat, `npm run example:chat`) in a real headless Chromium: ten
// messages typed and sent as a user would, the meter read after each answer. It rises message
// after message, a compaction entry appears (before → after), and the meter falls after it. A
// screenshot of the page after the compaction and the timings go to test-results/browser/.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChatServer, type ChatServer } from '../../examples/chat/server.ts';
import { launchBrowser, type Browser } from '../../scripts/browser.ts';
import { sendAndRead, type Reading } from '../../scripts/chat-screenshot.ts';
import { outputDir, skipBrowserTests } from './chromium.ts';

const skip = skipBrowserTests('test/browser/chat.test.ts');

describe.skipIf(skip)('chat example in headless Chromium', () => {
  let server: ChatServer;
  let browser: Browser;

  beforeAll(async () => {
    [server, browser] = await Promise.all([startChatServer({ port: 0, delayMs: 0 }), launchBrowser()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('ten messages: the meter rises, a compaction entry appears and the meter falls after it', async () => {
    const page = await browser.newPage({ width: 1280, height: 800 });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const started = performance.now();
    await page.goto(server.url);
    await page.waitForSelector('[data-testid="chat-send"]:not([disabled])');
    const loadMs = performance.now() - started;

    const readings: Reading[] = [];
    let firstMeterMs = 0;
    for (let i = 1; i <= 10; i++) {
      const sent = performance.now();
      readings.push(await sendAndRead(page, i));
      if (i === 1) firstMeterMs = performance.now() - sent;
    }
    expect(errors).toEqual([]);

    // Every reading: the meter's text holds its percentage.
    for (const r of readings) expect(r.text).toContain(`${Math.round(r.fraction * 100)}%`);
    // The messages: ten of the user's, ten answers.
    const roles = await page
      .locator('[data-testid="chat-message"]')
      .evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.role));
    expect(roles).toEqual(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 'user' : 'assistant')));

    const first = readings.findIndex((r) => r.compactions.length > 0);
    expect(first, JSON.stringify(readings.map((r) => r.fraction))).toBeGreaterThan(1);
    for (let i = 1; i < first; i++) expect(readings[i]!.fraction).toBeGreaterThan(readings[i - 1]!.fraction);
    expect(readings[first]!.fraction).toBeLessThan(readings[first - 1]!.fraction);
    const entry = readings[first]!.compactions[0]!;
    const [before, after] = /([\d.]+k?) → ([\d.]+k?) tokens/.exec(entry)?.slice(1) ?? [];
    const value = (s: string | undefined) => (s?.endsWith('k') ? Number(s.slice(0, -1)) * 1000 : Number(s));
    expect(value(after)).toBeLessThan(value(before));
    // One entry per compaction, never removed.
    for (let i = first + 1; i < readings.length; i++)
      expect(readings[i]!.compactions.length).toBeGreaterThanOrEqual(readings[i - 1]!.compactions.length);

    const dir = outputDir();
    await page.screenshot({ path: join(dir, 'chat-after-compaction.png') });
    const timings = { pageLoadMs: Math.round(loadMs), firstMessageToMeterMs: Math.round(firstMeterMs), readings };
    writeFileSync(join(dir, 'chat-timings.json'), `${JSON.stringify(timings, null, 2)}\n`);
    console.log(
      `chat page: load ${timings.pageLoadMs} ms, first message to meter ${timings.firstMessageToMeterMs} ms, ` +
        `meter ${readings.map((r) => `${Math.round(r.fraction * 100)}%`).join(' ')}, first compaction after message ${first + 1}`,
    );
  });
});
