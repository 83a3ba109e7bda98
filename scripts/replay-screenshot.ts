// Renders the chart of `context-guard replay --html` to a PNG for the README (docs/replay-chart.png):
//
//   node scripts/replay-screenshot.ts [transcript] [--window N] [--out docs/replay-chart.png]
//
// Default transcript: the Claude Code session of ../shared/transcripts replayed under a 150k window
// (so that the guard compacts once), else the test fixture. The SVG is the one the HTML report
// embeds; @resvg/resvg-js (a devDependency) rasterizes it with the system fonts.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Resvg } from '@resvg/resvg-js';
import { renderChartSvg } from '../cli/report-html.ts';
import { replay } from '../cli/replay.ts';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const positional = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
const shared = resolve('../shared/transcripts/claude-code__fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl');
const file = positional[0] ?? (existsSync(shared) ? shared : resolve('test/cli/fixtures/claude-code.jsonl'));
const window = Number(flag('--window') ?? (positional[0] === undefined && existsSync(shared) ? 150_000 : Number.NaN));
const out = flag('--out') ?? 'docs/replay-chart.png';

const report = await replay({ file, ...(Number.isFinite(window) ? { window } : {}) });
const svg = renderChartSvg(report, { standalone: true, width: 960, height: 440 });
const png = new Resvg(svg, {
  fitTo: { mode: 'zoom', value: 2 },
  font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' },
}).render();
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, png.asPng());
console.log(`wrote ${out} (${png.width}x${png.height}) from ${report.file}, window ${report.contextWindow}`);
