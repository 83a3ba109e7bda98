// The HTML report of `context-guard replay --html`: one self-contained page (inline SVG and CSS, no
// script, no external resource) that opens in any browser offline. The chart shows, per call, the
// prompt the host sent (estimated, and the provider's real count where the file has it), the prompt
// the guard sent, the window, the threshold and the warning line, and marks every compaction.
//
// What it is drawn to tell at a glance:
// - the scale is the window the guard works in (a little above it), not the host's largest prompt: a
//   host that ran to 165k under a 32k guard would otherwise squeeze the guard's whole story into the
//   bottom fifth. The host's curve is clipped at the top of the chart and the legend says how far
//   above the window it went;
// - no two labels overlap, whatever the number of compactions: the compaction labels sit in a band
//   above the plot, thinned left to right so that each keeps its room (every compaction keeps its
//   mark and its tooltip); the window, threshold and warning labels sit in the right margin, pushed
//   apart when their lines are close; the legend wraps. Text widths are estimated generously (the
//   page has no script to measure them); test/browser/replay-chart.test.ts checks the real boxes in
//   a browser.
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

/** A whole "nice" step (1, 2, 5, 10, 20, 50...) for about `count` ticks over [1, n]. */
function wholeStep(n: number, count: number): number {
  const raw = Math.max(1, n / count);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  return ([1, 2, 5, 10].find((s) => s * magnitude >= raw) ?? 10) * magnitude;
}

/**
 * A generous estimate of a text's width in pixels (the fonts of DejaVu Sans and Arial, rounded up):
 * labels are laid out with it, so an estimate too small would let two of them touch.
 */
export function textWidth(text: string, fontSize: number): number {
  let em = 0;
  for (const ch of text) {
    if (ch === ' ') em += 0.33;
    else if ("il.,:;!|'()[]ftj".includes(ch)) em += 0.4;
    else if (/[A-Z%mwMW@]/.test(ch)) em += 0.82;
    else if (ch === '→' || ch === '×' || ch === '—') em += 0.85;
    else em += 0.66;
  }
  return Math.ceil(em * fontSize * 1.06) + 2;
}

const COLORS = {
  window: '#d62728',
  threshold: '#ff7f0e',
  warn: '#a8a81a',
  host: '#7f7f7f',
  real: '#1f77b4',
  sent: '#2ca02c',
  compaction: '#9467bd',
  hostCompaction: '#8c564b',
};

const FONT = 12;
const SMALL = 11;
const LINE = 18;

export interface ChartOptions {
  width?: number;
  height?: number;
  /** add the SVG namespace and a white background, for a standalone .svg file */
  standalone?: boolean;
}

interface LegendItem {
  label: string;
  color: string;
  dash?: string;
  /** a note in plain text, without a line sample */
  note?: boolean;
}

/** Lays out items left to right from `left`, wrapping before `right`; returns each item's place and the rows used. */
function layoutRow<T>(
  items: T[],
  widthOf: (item: T) => number,
  left: number,
  right: number,
  gap: number,
): { placed: Array<{ item: T; x: number; row: number }>; rows: number } {
  const placed: Array<{ item: T; x: number; row: number }> = [];
  let x = left;
  let row = 0;
  for (const item of items) {
    const w = widthOf(item);
    if (x > left && x + w > right) {
      row++;
      x = left;
    }
    placed.push({ item, x, row });
    x += w + gap;
  }
  return { placed, rows: row + 1 };
}

/** Label positions (y of the baseline) kept at least `gap` apart, in order, within [top, bottom]. */
function spreadLabels(ys: number[], gap: number, top: number, bottom: number): number[] {
  const order = ys.map((y, i) => ({ y, i })).sort((a, b) => a.y - b.y);
  const out = new Array<number>(ys.length);
  let previous = Number.NEGATIVE_INFINITY;
  for (const { y, i } of order) {
    const placed = Math.max(y, previous + gap, top);
    out[i] = placed;
    previous = placed;
  }
  // Pushed past the bottom: move the lowest ones back up, keeping the gaps.
  let limit = bottom;
  for (let k = order.length - 1; k >= 0; k--) {
    const i = order[k]!.i;
    if (out[i]! > limit) out[i] = limit;
    limit = out[i]! - gap;
  }
  return out;
}

/** The chart as an SVG element. */
export function renderChartSvg(report: ReplayReport, options: ChartOptions = {}): string {
  const width = options.width ?? 1200;
  const height = options.height ?? 500;
  const calls = report.calls;
  const n = Math.max(1, calls.length);
  const window = report.contextWindow;
  const thresholdLine = report.threshold;
  const warnLine = window * report.warnAt;

  // The scale: the window the guard works in (and whatever the guard sent above it), not the host's peak.
  const hostPeak = Math.max(0, ...calls.map((c) => Math.max(c.estimate, c.real ?? 0)));
  const sentPeak = Math.max(0, ...calls.map((c) => c.sent));
  const top = Math.max(window, sentPeak) * 1.06;
  const yStep = niceStep(top, 5);
  const yMax = Math.ceil(top / yStep) * yStep;
  const hostAbove = hostPeak > yMax;

  const compactions = calls.filter((c) => c.compaction);
  const hostCompactions = calls.filter((c) => c.hostCompaction).length;
  const hasReal = calls.some((c) => c.real !== undefined);

  // The right margin holds the window, threshold and warning labels.
  const lineLabels = [
    { value: window, color: COLORS.window, dash: '8 4', text: `window ${int(window)}` },
    { value: thresholdLine, color: COLORS.threshold, dash: '4 4', text: `threshold ${int(thresholdLine)}` },
    { value: warnLine, color: COLORS.warn, dash: '2 4', text: `warning ${Math.round(report.warnAt * 100)}%` },
  ];
  const left = 64;
  const right = Math.max(...lineLabels.map((l) => textWidth(l.text, FONT))) + 16;

  // The legend, wrapped to the width; the plot starts below it and the compaction label band.
  const legend: LegendItem[] = [
    { label: 'host prompt, estimated', color: COLORS.host, dash: '5 3' },
    ...(hasReal ? [{ label: 'host prompt, real count', color: COLORS.real }] : []),
    { label: 'sent by the guard', color: COLORS.sent },
    ...(compactions.length > 0
      ? [{ label: `guard compaction (${compactions.length})`, color: COLORS.compaction }]
      : []),
    ...(hostCompactions > 0
      ? [{ label: `host compaction (${hostCompactions})`, color: COLORS.hostCompaction, dash: '2 3' }]
      : []),
    ...(hostAbove
      ? [
          {
            label: `↑ the host's prompt reached ${short(hostPeak)} (${+(hostPeak / window).toFixed(1)}× the window), above the chart`,
            color: COLORS.host,
            note: true,
          },
        ]
      : []),
  ];
  const legendWidth = (item: LegendItem) => (item.note ? 0 : 27) + textWidth(item.label, FONT);
  const legendLayout = layoutRow(legend, legendWidth, left, width - 16, 18);
  const legendTop = 44;
  const band = legendTop + (legendLayout.rows - 1) * LINE + 26; // baseline of the compaction labels
  const m = { left, right, top: band + 8, bottom: 44 };
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const x = (call: number): number => m.left + (n === 1 ? plotW / 2 : ((call - 1) / (n - 1)) * plotW);
  const y = (tokens: number): number => m.top + plotH - (Math.min(tokens, yMax) / yMax) * plotH;
  const f = (v: number): string => v.toFixed(1);

  const out: string[] = [];
  const ns = options.standalone ? ' xmlns="http://www.w3.org/2000/svg"' : '';
  out.push(
    `<svg${ns} width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="${FONT}" role="img" aria-label="tokens per call">`,
    `<defs><clipPath id="cg-plot"><rect x="${m.left}" y="${m.top}" width="${plotW}" height="${plotH}"/></clipPath></defs>`,
  );
  if (options.standalone) out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(
    `<text x="${m.left}" y="20" font-size="15" font-weight="bold">${escapeHtml(report.file)}: tokens per call</text>`,
  );

  // grid and axes
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    out.push(`<line x1="${m.left}" x2="${m.left + plotW}" y1="${f(y(v))}" y2="${f(y(v))}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${m.left - 6}" y="${f(y(v) + 4)}" text-anchor="end" fill="#555">${short(v)}</text>`);
  }
  const xStep = wholeStep(n, 10);
  const xTicks = [1];
  for (let c = xStep; c <= n; c += xStep) if (c > 1) xTicks.push(c);
  let tickRight = Number.NEGATIVE_INFINITY;
  for (const c of xTicks) {
    const w = textWidth(String(c), FONT);
    if (x(c) - w / 2 < tickRight + 6) continue;
    tickRight = x(c) + w / 2;
    out.push(`<text x="${f(x(c))}" y="${height - m.bottom + 16}" text-anchor="middle" fill="#555">${c}</text>`);
  }
  out.push(
    `<text x="${m.left + plotW / 2}" y="${height - 6}" text-anchor="middle" fill="#333">model call</text>`,
    `<line x1="${m.left}" x2="${m.left}" y1="${m.top}" y2="${m.top + plotH}" stroke="#999"/>`,
    `<line x1="${m.left}" x2="${m.left + plotW}" y1="${m.top + plotH}" y2="${m.top + plotH}" stroke="#999"/>`,
  );

  // compactions: every one marked (with its tooltip); labels in the band above, thinned to fit
  for (const c of calls) {
    if (!c.hostCompaction) continue;
    out.push(
      `<line x1="${f(x(c.call))}" x2="${f(x(c.call))}" y1="${m.top}" y2="${m.top + plotH}" stroke="${COLORS.hostCompaction}" stroke-dasharray="2 3"><title>the host compacted before call ${c.call}</title></line>`,
    );
  }
  let labelRight = Number.NEGATIVE_INFINITY;
  for (const c of compactions) {
    const k = c.compaction!;
    const cx = x(c.call);
    const title = `call ${c.call}: compaction (${escapeHtml(k.reason)}, ${escapeHtml(k.strategy)}) ${int(k.tokensBefore)} → ${int(k.tokensAfter)} tokens`;
    out.push(
      `<g><title>${title}</title>` +
        `<line x1="${f(cx)}" x2="${f(cx)}" y1="${m.top}" y2="${m.top + plotH}" stroke="${COLORS.compaction}" stroke-width="1" stroke-opacity="0.55"/>` +
        `<line x1="${f(cx)}" x2="${f(cx)}" y1="${f(y(k.tokensBefore))}" y2="${f(y(k.tokensAfter))}" stroke="${COLORS.compaction}" stroke-width="4"/></g>`,
    );
    const text = `${short(k.tokensBefore)}→${short(k.tokensAfter)}`;
    const w = textWidth(text, SMALL);
    // Centred on its mark, inside the plot's width, clear of the label before it.
    const lx = Math.min(Math.max(cx - w / 2, m.left), m.left + plotW - w);
    if (lx < labelRight + 8) continue;
    labelRight = lx + w;
    out.push(
      `<text x="${f(lx)}" y="${band}" font-size="${SMALL}" fill="${COLORS.compaction}"><title>${title}</title>${text}</text>`,
    );
  }

  // window, threshold, warning: lines across the plot, labels in the right margin
  const labelYs = spreadLabels(
    lineLabels.map((l) => y(l.value) + 4),
    FONT + 4,
    m.top + FONT,
    m.top + plotH,
  );
  for (const [i, l] of lineLabels.entries()) {
    out.push(
      `<line x1="${m.left}" x2="${m.left + plotW}" y1="${f(y(l.value))}" y2="${f(y(l.value))}" stroke="${l.color}" stroke-width="1.5" stroke-dasharray="${l.dash}"/>`,
      `<text x="${m.left + plotW + 8}" y="${f(labelYs[i]!)}" fill="${l.color}">${escapeHtml(l.text)}</text>`,
    );
  }

  // series, clipped to the plot (the host's may run far above the window)
  const path = (points: Array<[number, number] | undefined>): string => {
    let d = '';
    let pen = false;
    for (const p of points) {
      if (!p) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${f(x(p[0]))} ${f(m.top + plotH - (p[1] / yMax) * plotH)}`;
      pen = true;
    }
    return d;
  };
  const series = (d: string, color: string, w: number, dash = ''): void => {
    if (d !== '') {
      out.push(
        `<path d="${d}" fill="none" stroke="${color}" stroke-width="${w}"${dash ? ` stroke-dasharray="${dash}"` : ''} stroke-linejoin="round" clip-path="url(#cg-plot)"/>`,
      );
    }
  };
  series(path(calls.map((c) => [c.call, c.estimate])), COLORS.host, 1.5, '5 3');
  series(path(calls.map((c) => (c.real === undefined ? undefined : [c.call, c.real]))), COLORS.real, 1.5);
  series(path(calls.map((c) => [c.call, c.sent])), COLORS.sent, 2.5);
  if (calls.length <= 400) {
    for (const c of calls) {
      if (c.real === undefined || c.real > yMax) continue;
      const err = c.error === undefined ? '' : ` (estimate ${c.error >= 0 ? '+' : ''}${(c.error * 100).toFixed(2)}%)`;
      out.push(
        `<circle cx="${f(x(c.call))}" cy="${f(y(c.real))}" r="2" fill="${COLORS.real}"><title>call ${c.call}: real ${int(c.real)}, estimated ${int(c.estimate)}${err}, sent ${int(c.sent)}</title></circle>`,
      );
    }
  }

  // legend
  for (const { item, x: lx, row } of legendLayout.placed) {
    const ly = legendTop + row * LINE;
    if (item.note) {
      out.push(`<text x="${lx}" y="${ly}" fill="${item.color}" font-style="italic">${escapeHtml(item.label)}</text>`);
      continue;
    }
    out.push(
      `<line x1="${lx}" x2="${lx + 22}" y1="${ly - 4}" y2="${ly - 4}" stroke="${item.color}" stroke-width="2.5"${item.dash ? ` stroke-dasharray="${item.dash}"` : ''}/>`,
      `<text x="${lx + 27}" y="${ly}" fill="#333">${escapeHtml(item.label)}</text>`,
    );
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
svg { display: block; width: 100%; max-width: 1600px; height: auto; border: 1px solid #ddd; }
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
