// Step 1, the cheapest: tool outputs, usually the bulk of an agent's context and the easiest thing
// to give up (the tool can be run again). Oversized results are truncated (head and tail kept);
// then, outside a protected recent tail, old results are replaced by a placeholder that names what
// was removed, but only when that alone reaches the target: otherwise those outputs are better
// read by the summarizer than thrown away before it. The latest tool results (the model has not
// seen them yet) are never touched when they fit under the threshold (see Work.latest): the cap
// and the target are costs, and a cost never takes from the model what it is waiting for.
import { isProtectedTool, outputChars, PLACEHOLDER, placeholderOutput } from '../tool-edits.ts';
import { toolOutputText } from '../text.ts';
import { MIN_KEPT_CHARS, type Work } from '../work.ts';

/** A result is truncated only when it exceeds the cap by more than this (the marker costs ~40). */
const TRUNCATION_MARGIN_CHARS = 200;

export function prune(w: Work): void {
  const options = w.settings.prune;
  if (!options) return;
  truncateOversized(w, options);
  if (!w.under() && w.input.reason !== 'manual') replaceOld(w, options);
}

type PruneSettings = Exclude<Work['settings']['prune'], false>;

function truncateOversized(w: Work, options: PruneSettings): void {
  const maxChars = Math.max(MIN_KEPT_CHARS, Math.floor(options.maxToolResultTokens / w.input.tokensPerChar));
  for (const { part, key, origin } of w.toolResults()) {
    if (isProtectedTool(part.toolName, options.neverPrune) || Object.hasOwn(w.memo.tools, key) || w.protects(origin))
      continue;
    // Truncating barely-over results would save less than the marker it adds.
    if (outputChars(part) > maxChars + TRUNCATION_MARGIN_CHARS) {
      w.memo.tools[key] = maxChars;
      w.stats.truncated++;
    }
  }
  if (w.stats.truncated > 0) w.changed('prune');
}

function replaceOld(w: Work, options: PruneSettings): void {
  // The protected tail: the most recent messages within protectRecentTokens.
  let protectedFrom = w.cur.view.messages.length;
  for (let acc = 0; protectedFrom > w.cur.view.headLength; protectedFrom--) {
    acc += w.messageTokens(protectedFrom - 1);
    if (acc > options.protectRecentTokens) break;
  }
  const candidates = w.toolResults().filter(
    // Errors are small and say what went wrong: they are kept for the summary.
    ({ part, index, key, origin }) =>
      index < protectedFrom &&
      !w.protects(origin) &&
      !isProtectedTool(part.toolName, options.neverPrune) &&
      w.memo.tools[key] !== PLACEHOLDER &&
      !toolOutputText(part.output).isError,
  );
  const saving = (part: (typeof candidates)[number]['part']) =>
    Math.max(
      0,
      outputChars(part) - String((placeholderOutput(part, w.memo.recall === true) as { value: string }).value).length,
    ) * w.input.tokensPerChar;
  const need = w.cur.tokens - w.settings.target;
  if (candidates.reduce((n, c) => n + saving(c.part), 0) < need) return;
  // Oldest first, until the target is reached: one batch, so the next calls do not prune again.
  let saved = 0;
  for (const { part, key } of candidates) {
    if (saved >= need) break;
    const gain = saving(part);
    if (gain <= 0) continue;
    w.memo.tools[key] = PLACEHOLDER;
    w.stats.pruned++;
    saved += gain;
  }
  w.changed('prune');
}
