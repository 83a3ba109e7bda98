// Clip-archive summaries (the `clipArchive` option): instead of one rolling summary that every
// compaction rewrites, each compaction adds a summary batch of its own. The prompt shows the first
// and the last batches, with a line saying how many are left out in between and that recall
// searches them; once too many are left out, those are summarized again into one batch a level
// deeper. Old batches are never rewritten, so the start of the summary stays stable.
import type { ArchiveBatch } from '../archive/types.ts';
import type { SummaryBatch } from './memo.ts';
import type { Work } from './work.ts';

/** What the summary step needs: the room the shown batches take, and the rendering once the new summary is written. */
export interface ClipArchive {
  shownChars: number;
  render: (summary: string, count: number) => Promise<string>;
}

const batchTitle = (b: SummaryBatch, n: number, total: number) =>
  `[Summary batch ${n} of ${total} · ${b.label} · depth ${b.depth} · ${b.count} messages]`;

/** The batches as the prompt shows them: the first and last ones, and a line for those left out. */
export function renderBatches(batches: readonly SummaryBatch[], first: number, last: number): string {
  const total = batches.length;
  const all = total <= first + last;
  const parts: string[] = [];
  batches.forEach((b, i) => {
    if (all || i < first || i >= total - last) parts.push(`${batchTitle(b, i + 1, total)}\n${b.text}`);
    else if (i === first) {
      const omitted = batches.slice(first, total - last);
      parts.push(
        `[${omitted.length} summary batch${omitted.length === 1 ? '' : 'es'} left out here (${omitted[0]?.label} to ${omitted.at(-1)?.label}): the recall tool searches them, by query or by label.]`,
      );
    }
  });
  return parts.join('\n\n');
}

export function clipArchiveBatches(w: Work, previousSummary: string | undefined): ClipArchive {
  const { input, memo, stats } = w;
  const { first, last, buffer } = w.settings.clipArchive as { first: number; last: number; buffer: number };
  // A summary from before clip-archive mode (or rebuilt by the last resort) becomes the first batch.
  const old: SummaryBatch[] =
    memo.batches ?? (previousSummary ? [{ label: 'earlier-summary', depth: 0, count: 0, text: previousSummary }] : []);
  const shown = old.filter((_, i) => i < first || i >= old.length + 1 - last);
  const label = input.archive?.label ?? `summary-batch-${memo.compactions + 1}`;
  return {
    shownChars: shown.reduce((n, b) => n + b.text.length + 120, 0),
    render: async (summary, count) => {
      let batches = [...old, { label, depth: 0, count, text: summary }];
      const extra: ArchiveBatch[] = [];
      if (input.archive) extra.push(summaryBatch(label, input.archive, [{ id: `${label}#summary`, text: summary }], 0));
      if (batches.length > first + last + buffer) {
        const middle = batches.slice(first, batches.length - last);
        const depth = Math.max(...middle.map((b) => b.depth)) + 1;
        const mergedLabel = `${label}~depth-${depth}`;
        const room = w.settings.maxSummaryTokens;
        const outcome = await input.summarize(
          middle.map((b) => ({ role: 'assistant', content: `${batchTitle(b, 0, 0)}\n${b.text}` })),
          undefined,
          room,
          room,
        );
        stats.calls += outcome.calls;
        stats.inputTokens += outcome.inputTokens;
        const merged: SummaryBatch = {
          label: mergedLabel,
          depth,
          count: middle.reduce((n, b) => n + b.count, 0),
          text: outcome.text.trim(),
        };
        batches = [...batches.slice(0, first), merged, ...batches.slice(batches.length - last)];
        if (input.archive)
          extra.push(
            summaryBatch(
              mergedLabel,
              input.archive,
              middle.map((b) => ({ id: b.label, text: b.text })),
              depth,
            ),
          );
      }
      memo.batches = batches;
      stats.batches.push(...extra);
      return renderBatches(batches, first, last);
    },
  };
}

/** An archive batch of summaries (the `summary` role): what a batch summary or a deeper merge stands on. */
function summaryBatch(
  label: string,
  span: { start: string; end: string },
  summaries: Array<{ id: string; text: string }>,
  depth: number,
): ArchiveBatch {
  const items = summaries.map(({ id, text }) => ({
    id,
    label,
    role: 'summary' as const,
    text,
    position: -1,
    replaced: 'summarized' as const,
  }));
  return {
    label,
    depth,
    start: span.start,
    end: span.end,
    header: `[depth:${depth}|start:${span.start}|end:${span.end}|count:${items.length}]`,
    items,
    chars: items.reduce((n, i) => n + i.text.length, 0),
  };
}
