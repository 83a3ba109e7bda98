// The HTML report of `context-guard replay --html`: one self-contained page (inline SVG and CSS, no
// script, no external resource) that opens in any browser offline. The chart shows, per call, the
// prompt the host sent (estimated, and the provider's real count where the file has it), the prompt
// the guard sent, the window, the threshold and the warning line, and marks every compaction.
import { formatCalls, formatIssues, formatSummary, type ReplayReport } from './replay.ts';

const escapeHtml = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const int = (n: number): string => Math.round(n).toLocaleString('en-US');

function short(n: number): string {
  if (n >= 1_000_000) return `${+(n / 1_000_000).toFixed(1)}M`;
  if (n >= 1_000) return `${+(n / 1_000).toFixed(n >= 100_000 ? 0 : 1)}k`;
  return String(Math.round(n));
}

/** A "nice" step for about `count` ticks over [0, max]. */
function niceStep(max: number, count: number): number {
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].find((s) => s * magnitude >= raw) ?? 10;
  return step * magnitude;
}

const COLORS = {
  window: '#d62728',
  threshold: '#ff7f0e',
  warn: '#bcbd22',
  host: '#7f7f7f',
  real: '#1f77b4',
  sent: '#2ca02c',
  compaction: '#9467bd',
  hostCompaction: '#8c564b',
};

export interface ChartOptions {
  width?: number;
  height?: number;
  /** add the SVG namespace and a white background, for a standalone .svg file (or a PNG) */
  standalone?: boolean;
}

/** The chart as an SVG element. */
export function renderChartSvg(report: ReplayReport, options: ChartOptions = {}): string {
  const width = options.width ?? 960;
  const height = options.height ?? 440;
  const m = { left: 64, right: 24, top: 64, bottom: 44 };
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const calls = report.calls;
  const n = Math.max(1, calls.length);
  const maxValue = Math.max(report.contextWindow, ...calls.map((c) => Math.max(c.estimate, c.real ?? 0, c.sent)));
  const yStep = niceStep(maxValue * 1.05, 5);
  const yMax = Math.ceil((maxValue * 1.05) / yStep) * yStep;
  const x = (call: number): number => m.left + (n === 1 ? plotW / 2 : ((call - 1) / (n - 1)) * plotW);
  const y = (tokens: number): number => m.top + plotH - (tokens / yMax) * plotH;
  const f = (v: number): string => v.toFixed(1);
  const out: string[] = [];
  const ns = options.standalone ? ' xmlns="http://www.w3.org/2000/svg"' : '';
  out.push(
    `<svg${ns} width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12" role="img" aria-label="tokens per call">`,
  );
  if (options.standalone) out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(
    `<text x="${m.left}" y="20" font-size="15" font-weight="bold">${escapeHtml(report.file)}: tokens per call</text>`,
  );
  // grid and axes
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    out.push(`<line x1="${m.left}" x2="${width - m.right}" y1="${f(y(v))}" y2="${f(y(v))}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${m.left - 6}" y="${f(y(v) + 4)}" text-anchor="end" fill="#555">${short(v)}</text>`);
  }
  const xStep = Math.max(1, niceStep(n, 10));
  for (let c = 1; c <= n; c += c === 1 && xStep > 1 ? xStep - 1 : xStep) {
    out.push(`<text x="${f(x(c))}" y="${height - m.bottom + 16}" text-anchor="middle" fill="#555">${c}</text>`);
  }
  out.push(
    `<text x="${m.left + plotW / 2}" y="${height - 8}" text-anchor="middle" fill="#333">model call</text>`,
    `<line x1="${m.left}" x2="${m.left}" y1="${m.top}" y2="${m.top + plotH}" stroke="#999"/>`,
    `<line x1="${m.left}" x2="${width - m.right}" y1="${m.top + plotH}" y2="${m.top + plotH}" stroke="#999"/>`,
  );
  // compactions
  for (const c of calls) {
    if (c.hostCompaction) {
      out.push(
        `<line x1="${f(x(c.call))}" x2="${f(x(c.call))}" y1="${m.top}" y2="${m.top + plotH}" stroke="${COLORS.hostCompaction}" stroke-dasharray="2 3"><title>the host compacted before call ${c.call}</title></line>`,
      );
    }
    const k = c.compaction;
    if (k) {
      out.push(
        `<g><title>call ${c.call}: compaction (${escapeHtml(k.reason)}, ${escapeHtml(k.strategy)}) ${int(k.tokensBefore)} → ${int(k.tokensAfter)} tokens</title>` +
          `<line x1="${f(x(c.call))}" x2="${f(x(c.call))}" y1="${m.top}" y2="${m.top + plotH}" stroke="${COLORS.compaction}" stroke-width="1.5"/>` +
          `<line x1="${f(x(c.call))}" x2="${f(x(c.call))}" y1="${f(y(k.tokensBefore))}" y2="${f(y(k.tokensAfter))}" stroke="${COLORS.compaction}" stroke-width="4"/>` +
          `<text x="${f(x(c.call) + 4)}" y="${m.top + 12}" fill="${COLORS.compaction}">${short(k.tokensBefore)}→${short(k.tokensAfter)}</text></g>`,
      );
    }
  }
  // window, threshold, warning
  const hline = (value: number, color: string, dash: string, label: string): void => {
    out.push(
      `<line x1="${m.left}" x2="${width - m.right}" y1="${f(y(value))}" y2="${f(y(value))}" stroke="${color}" stroke-width="1.5" stroke-dasharray="${dash}"/>`,
      `<text x="${width - m.right - 4}" y="${f(y(value) - 4)}" text-anchor="end" fill="${color}">${escapeHtml(label)}</text>`,
    );
  };
  hline(report.contextWindow, COLORS.window, '8 4', `window ${int(report.contextWindow)}`);
  hline(report.threshold, COLORS.threshold, '4 4', `threshold ${int(report.threshold)}`);
  hline(report.contextWindow * report.warnAt, COLORS.warn, '2 4', `warning ${Math.round(report.warnAt * 100)}%`);
  // series
  const path = (points: Array<[number, number] | undefined>): string => {
    let d = '';
    let pen = false;
    for (const p of points) {
      if (!p) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${f(x(p[0]))} ${f(y(p[1]))}`;
      pen = true;
    }
    return d;
  };
  const series = (d: string, color: string, w: number, dash = ''): void => {
    if (d !== '') {
      out.push(
        `<path d="${d}" fill="none" stroke="${color}" stroke-width="${w}"${dash ? ` stroke-dasharray="${dash}"` : ''} stroke-linejoin="round"/>`,
      );
    }
  };
  series(path(calls.map((c) => [c.call, c.estimate])), COLORS.host, 1.5, '5 3');
  series(path(calls.map((c) => (c.real === undefined ? undefined : [c.call, c.real]))), COLORS.real, 1.5);
  series(path(calls.map((c) => [c.call, c.sent])), COLORS.sent, 2.5);
  if (calls.length <= 400) {
    for (const c of calls) {
      if (c.real === undefined) continue;
      const err = c.error === undefined ? '' : ` (estimate ${c.error >= 0 ? '+' : ''}${(c.error * 100).toFixed(2)}%)`;
      out.push(
        `<circle cx="${f(x(c.call))}" cy="${f(y(c.real))}" r="2" fill="${COLORS.real}"><title>call ${c.call}: real ${int(c.real)}, estimated ${int(c.estimate)}${err}, sent ${int(c.sent)}</title></circle>`,
      );
    }
  }
  // legend
  const legend: Array<[string, string, string]> = [
    ['host prompt, estimated', COLORS.host, '5 3'],
    ['host prompt, real count', COLORS.real, ''],
    ['sent by the guard', COLORS.sent, ''],
    ['guard compaction', COLORS.compaction, ''],
    ['host compaction', COLORS.hostCompaction, '2 3'],
  ];
  let lx = m.left;
  for (const [label, color, dash] of legend) {
    out.push(
      `<line x1="${lx}" x2="${lx + 22}" y1="42" y2="42" stroke="${color}" stroke-width="2.5"${dash ? ` stroke-dasharray="${dash}"` : ''}/>`,
      `<text x="${lx + 27}" y="46" fill="#333">${escapeHtml(label)}</text>`,
    );
    lx += 36 + label.length * 7.2;
  }
  out.push('</svg>');
  return out.join('\n');
}

/** The whole page. */
export function renderHtml(report: ReplayReport): string {
  const summary = formatSummary(report).join('\n');
  const issues = formatIssues(report);
  const log = formatCalls(report).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>context-guard replay: ${escapeHtml(report.file)}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; }
pre { background: #f6f8fa; padding: 12px; overflow-x: auto; font-size: 12px; }
svg { max-width: 100%; height: auto; border: 1px solid #ddd; }
h1 { font-size: 20px; }
</style>
</head>
<body>
<h1>context-guard replay: ${escapeHtml(report.file)}</h1>
${renderChartSvg(report)}
<h2>Summary</h2>
<pre>${escapeHtml(summary)}</pre>
${issues.length > 0 ? `<h2>Malformed input</h2>\n<pre>${escapeHtml(issues.join('\n'))}</pre>` : ''}
<details>
<summary>Per-call log (${report.calls.length} calls)</summary>
<pre>${escapeHtml(log)}</pre>
</details>
</body>
</html>
`;
}
