// The replay chart of `context-guard replay --html` as a PNG, taken in the system's headless
// Chromium (the page as a browser draws it, fonts included), for the README:
//
//   node scripts/replay-screenshot.ts <transcript> --out <file.png> [--window N] [--width 1200] [--force]
//
// It writes only where --out says, and refuses to overwrite an existing file without --force (a
// tracked image is never replaced by accident). The README's image:
//
//   node scripts/replay-screenshot.ts ../shared/transcripts/claude-code__258c7280-ae70-4798-800f-63464d01a85d.jsonl \
//     --window 32000 --out docs/replay-chart.png --force
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { renderHtml } from '../cli/report-html.ts';
import { replay } from '../cli/replay.ts';
import { launchBrowser } from './browser.ts';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const valued = new Set(['--out', '--window', '--width']);
const positional = args.filter((a, i) => !a.startsWith('--') && !valued.has(args[i - 1] ?? ''));
const file = positional[0];
const out = flag('--out');
if (!file || !out) {
  console.error(
    'usage: node scripts/replay-screenshot.ts <transcript> --out <file.png> [--window N] [--width 1200] [--force]',
  );
  process.exit(2);
}
if (existsSync(out) && !args.includes('--force')) {
  console.error(`${out} exists: pass --force to overwrite it`);
  process.exit(2);
}
const window = flag('--window') === undefined ? undefined : Number(flag('--window'));
const width = Number(flag('--width') ?? 1200);

const report = await replay({ file, ...(window !== undefined && Number.isFinite(window) ? { window } : {}) });
const browser = await launchBrowser({ deviceScaleFactor: 2 });
try {
  const page = await browser.newPage({ width: width + 48, height: 900 });
  await page.setContent(renderHtml(report));
  mkdirSync(dirname(out), { recursive: true });
  await page.locator('svg').screenshot({ path: out });
  console.log(
    `wrote ${out} from ${report.file}: ${report.calls.length} calls, ${report.summary.compactions} compactions, window ${report.contextWindow}`,
  );
} finally {
  await browser.close();
}
