// The compaction pipeline, cheapest step first, stopping as soon as the prompt is under target:
//   1. prune (steps/prune.ts): truncate oversized tool results, then replace old ones by placeholders;
//   2. summarize (steps/summarize.ts) everything before a cut point into one summary message;
//   3. hard fit (steps/hard-fit.ts): tool outputs, media, assistant text, earlier user text;
//   4. the last resort (steps/last-resort.ts): the smallest prompt, when even that is over the
//      threshold, or when the system messages, tools and the request's text are from the start.
// Never throws, never loops: each step runs once. Every step edits the memo (what to do to the
// host's history), and the prompt is re-rendered from it (work.ts), so what this call sends is
// exactly what later calls will re-apply.
import { replaceMedia } from './memo.ts';
import { hardFit } from './steps/hard-fit.ts';
import { lastResort } from './steps/last-resort.ts';
import { prune } from './steps/prune.ts';
import { summarizeOlder } from './steps/summarize.ts';
import { Work, type PipelineInput, type PipelineOutput } from './work.ts';

export type { PipelineInput, PipelineOutput } from './work.ts';

export async function runPipeline(input: PipelineInput): Promise<PipelineOutput> {
  const w = new Work(input);
  // The irreducible part (system messages, tools, the text of the latest request: its images and
  // files can be named instead) over the threshold: no step can help, so straight to the last resort.
  const request = w.request >= 0 ? input.hostMessages[w.request] : undefined;
  const irreducible = input.measure([
    ...input.hostMessages.filter((m) => m?.role === 'system'),
    ...(request ? [replaceMedia(request, () => true)] : []),
  ]);
  if (input.price(irreducible.chars, irreducible.mediaTokens) > input.threshold) return w.finish(lastResort(w));
  prune(w);
  // A manual compaction (the compact tool, an overflow retry) always summarizes.
  if (input.reason === 'manual' || !w.under()) await summarizeOlder(w);
  hardFit(w);
  return w.finish(w.cur.tokens > input.threshold ? lastResort(w) : false);
}
