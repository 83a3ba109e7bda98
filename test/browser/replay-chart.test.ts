// The replay chart (cli/report-html.ts) in a real headless Chromium: the page of
// `context-guard replay --html` loaded as it is, and the boxes of its text labels read from the DOM.
// No two labels overlap, for every fixture transcript (under a window that makes the guard compact)
// and for a synthetic run of 100 compactions whose host ran far above the window; the scale is the
// window the guard works in, not the host's peak.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderChartSvg, renderHtml } from '../../cli/report-html.ts';
import { replay, type ReplayCallReport, type ReplayReport } from '../../cli/replay.ts';
import { launchBrowser, type Browser } from '../../scripts/browser.ts';
import { outputDir, skipBrowserTests } from './chromium.ts';

const skip = skipBrowserTests('test/browser/replay-chart.test.ts');
const fixture = (name: string): string => join(import.meta.dirname, '..', 'cli', 'fixtures', name);

/** A run of `compactions` compactions over 3 × as many calls; the host grows to 5 × the window. */
function syntheticRun(compactions: number, window = 32_000): ReplayReport {
  const calls: ReplayCallReport[] = [];
  const n = compactions * 3;
  let sent = 6_000;
  for (let call = 1; call <= n; call++) {
    const estimate = 6_000 + (call / n) * window * 5;
    const compacting = call % 3 === 0;
    const before = sent + 2_500;
    sent = compacting ? 9_000 + (call % 7) * 300 : before;
    calls.push({
      call,
      messages: call * 2,
      estimate,
      real: estimate * 1.01,
      error: -0.01,
      scored: true,
      sent,
      sentMessages: 10,
      fraction: sent / window,
      ...(compacting
        ? {
            compaction: {
              reason: 'threshold',
              strategy: call % 2 ? 'summary' : 'prune',
              tokensBefore: before,
              tokensAfter: sent,
            } as ReplayCallReport['compaction'],
          }
        : {}),
      ...(call === Math.floor(n / 2) ? { hostCompaction: true } : {}),
    });
  }
  return {
    file: `synthetic-${compactions}-compactions.jsonl`,
    format: 'claude-code',
    modelId: 'synthetic',
    contextWindow: window,
    windowSource: 'option',
    threshold: window * 0.8,
    warnAt: 0.7,
    calls,
    summary: undefined as unknown as ReplayReport['summary'], // the chart alone is drawn (chartPage)
    issues: [],
  };
}

interface Box {
  text: string;
  left: number;
  top: number;
  right: number;
  bottom: number;
}

describe.skipIf(skip)('replay chart in headless Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** The chart alone, in a page styled as the report's (for a synthetic run, which has no summary). */
  const chartPage = (report: ReplayReport): string =>
    `<!doctype html><html><head><meta charset="utf-8"><style>body { margin: 24px; } svg { display: block; width: 100%; max-width: 1600px; height: auto; }</style></head><body>${renderChartSvg(report)}</body></html>`;

  const cases: Array<{ name: string; report: () => Promise<ReplayReport>; page?: (r: ReplayReport) => string }> = [
    { name: 'ai-sdk.json, window 4,000', report: () => replay({ file: fixture('ai-sdk.json'), window: 4_000 }) },
    { name: 'openai.json, window 2,000', report: () => replay({ file: fixture('openai.json'), window: 2_000 }) },
    {
      name: 'claude-code.jsonl, window 16,000',
      report: () => replay({ file: fixture('claude-code.jsonl'), window: 16_000 }),
    },
    { name: 'claude-code.jsonl, its own window', report: () => replay({ file: fixture('claude-code.jsonl') }) },
    { name: 'codex.jsonl, window 12,000', report: () => replay({ file: fixture('codex.jsonl'), window: 12_000 }) },
    {
      name: 'mini-swe-agent.traj.json, window 2,000',
      report: () => replay({ file: fixture('mini-swe-agent.traj.json'), window: 2_000 }),
    },
    { name: 'a synthetic run of 100 compactions', report: async () => syntheticRun(100), page: chartPage },
    { name: 'a synthetic run of 3 compactions', report: async () => syntheticRun(3, 8_000), page: chartPage },
  ];

  it('no two text labels overlap, and the scale is the window the guard works in', async () => {
    const page = await browser.newPage({ width: 1400, height: 900 });
    const failures: string[] = [];
    let compactionsDrawn = 0;
    for (const c of cases) {
      const report = await c.report();
      await page.setContent((c.page ?? renderHtml)(report));
      const boxes: Box[] = await page.locator('svg text').evaluateAll((els) =>
        els
          .map((el) => {
            const r = el.getBoundingClientRect();
            // The label's own text (a <title> inside it is a tooltip, not drawn).
            const text = [...el.childNodes]
              .filter((node) => node.nodeType === 3)
              .map((node) => node.textContent)
              .join('');
            return { text, left: r.left, top: r.top, right: r.right, bottom: r.bottom };
          })
          .filter((b) => b.text.trim() !== '' && b.right > b.left),
      );
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          const a = boxes[i]!;
          const b = boxes[j]!;
          const overlapX = Math.min(a.right, b.right) - Math.max(a.left, b.left);
          const overlapY = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
          if (overlapX > 0.5 && overlapY > 0.5) failures.push(`${c.name}: "${a.text}" overlaps "${b.text}"`);
        }
      }
      // Every label inside the picture.
      const svg = await page.locator('svg').boundingBox();
      for (const b of boxes)
        if (b.left < svg!.x - 0.5 || b.right > svg!.x + svg!.width + 0.5)
          failures.push(`${c.name}: "${b.text}" leaves the chart`);
      // The scale: the top tick is the window or a little above (never the host's peak).
      const ticks = boxes.filter((b) => /^[\d.]+[kM]?$/.test(b.text) && b.right < svg!.x + 64);
      const value = (t: string) => Number.parseFloat(t) * (t.endsWith('M') ? 1e6 : t.endsWith('k') ? 1e3 : 1);
      const topTick = Math.max(...ticks.map((b) => value(b.text)));
      const sentPeak = Math.max(...report.calls.map((call) => call.sent));
      expect(topTick, c.name).toBeLessThanOrEqual(Math.max(report.contextWindow, sentPeak) * 1.3);
      compactionsDrawn += await page.locator('svg g title').count();
      if (c.name.includes('100 compactions')) {
        await page.locator('svg').screenshot({ path: join(outputDir(), 'replay-chart-100-compactions.png') });
        expect(await page.locator('svg g title').count()).toBe(100); // every compaction keeps its mark and tooltip
        expect(await page.locator('svg text', { hasText: 'above the chart' }).count()).toBe(1);
      }
    }
    expect(failures).toEqual([]);
    expect(compactionsDrawn).toBeGreaterThan(100);
  });
});
