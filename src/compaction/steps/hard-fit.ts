// Step 3: when pruning and the summary were not enough (a single tool result larger than the
// window, a giant recent turn), what matters least is cut until the prompt is under the threshold:
// the largest tool outputs, then images and files (oldest first, named by a placeholder), then
// assistant text, then the user's earlier messages. The latest request is never among them, nor the
// latest tool results when they fit with it (see Work.latest). Its aim is the threshold, not the
// target: the target is a cost (how far the next compaction is), and pruning and summaries, which
// the archive makes lossless, may pursue it; a destructive cut is made only because the prompt
// would not fit otherwise.
import type { GuardMessage } from '../../messages.ts';
import { instructionsOf, type LostWords } from '../instructions.ts';
import { mediaKey } from '../media-placeholder.ts';
import { outputChars } from '../tool-edits.ts';
import { waterLevel } from '../water-level.ts';
import { fitAim, MIN_KEPT_CHARS, type Work } from '../work.ts';

export function hardFit(w: Work): void {
  const request = w.request;
  const aim = fitAim(w.input.threshold);
  const over = () => w.cur.tokens > aim;
  if (over()) shrinkToolOutputs(w, aim);
  if (over()) replaceMediaUntil(w, aim, (o) => o !== request);
  if (over()) clipMessagesOf(w, aim, (m) => m.role === 'assistant');
  if (over()) {
    clipMessagesOf(w, aim, (m, o) => m.role === 'user' && o !== request);
    reportClippedUserWords(w);
  }
}

/**
 * The user's sentences a cut of their earlier messages left out, reported by message (the
 * `user-words-dropped` event): a cut is the last resort before the request, and what the user said
 * never leaves the prompt silently. Sentences are looked for in the message as it is now sent.
 */
function reportClippedUserWords(w: Work): void {
  const lost: LostWords[] = [];
  w.cur.view.messages.forEach((m, i) => {
    const o = w.cur.view.origin[i] ?? -1;
    if (o < 0 || o === w.request || m.role !== 'user') return;
    const original = w.input.hostMessages[o] as GuardMessage;
    if (original === m || w.memo.clips[String(w.input.hashOf(o))] === undefined) return;
    const sent = JSON.stringify(m.content);
    const missing = instructionsOf(original, w.input.redact).filter(
      (note) => !sent.includes(JSON.stringify(note).slice(1, -1)),
    );
    if (missing.length > 0)
      lost.push({ index: o, sentences: missing.length, chars: missing.reduce((n, note) => n + note.length, 0) });
  });
  if (lost.length > 0) w.input.onUserWordsLost(lost, 0);
}

/** Characters a cut adds (the marker saying how much was left out, with its line breaks). */
const MARKER_CHARS = 40;

/**
 * The level to cut `sizes` to so that `excess` is saved once every cut item carries its marker:
 * without them each cut would overshoot by its marker, and the next, more precious tier would pay.
 */
function levelWithMarkers(sizes: number[], excess: number): number {
  const first = waterLevel(sizes, excess, MIN_KEPT_CHARS);
  const cut = sizes.filter((size) => size > first).length;
  return waterLevel(sizes, excess + cut * MARKER_CHARS, MIN_KEPT_CHARS);
}

/**
 * The cut for an item now `size` long (as rendered, with any earlier cut and its marker) whose
 * stored cut is `current`: down to `level`, and an earlier cut is lowered by what it still is over.
 */
function nextCut(current: number | undefined, size: number, level: number): number | undefined {
  if (size <= level) return undefined;
  const next = current === undefined ? level : Math.max(MIN_KEPT_CHARS, Math.min(level, current - (size - level)));
  return next === current ? undefined : next;
}

/** The largest tool outputs, cut evenly (water-filling) down to `aim`, in a few rounds that close the gap. */
function shrinkToolOutputs(w: Work, aim: number): void {
  for (let round = 0; round < 3 && w.cur.tokens > aim; round++) {
    const results = w.toolResults().filter((r) => !w.protects(r.origin));
    const excess = (w.cur.tokens - aim) / w.input.tokensPerChar;
    const level = levelWithMarkers(
      results.map((r) => outputChars(r.part)),
      excess,
    );
    let changed = false;
    for (const { part, key } of results) {
      const current = w.memo.tools[key];
      const next = nextCut(current !== undefined && current >= 0 ? current : undefined, outputChars(part), level);
      if (next === undefined) continue;
      w.memo.tools[key] = next;
      changed = true;
    }
    if (!changed) return;
    w.changed('hard-fit');
  }
}

/** Replaces images and files of the host's messages whose origin `which` accepts, oldest first, until `aim`. */
export function replaceMediaUntil(w: Work, aim: number, which: (origin: number) => boolean): void {
  const media = w.memo.media ?? (w.memo.media = {});
  const { messages, origin } = w.cur.view;
  let changed = false;
  let excess = w.cur.tokens - aim;
  for (let i = 0; i < messages.length && excess > 0; i++) {
    const o = origin[i] ?? -1;
    const content = messages[i]?.content;
    if (
      o < 0 ||
      !which(o) ||
      !Array.isArray(content) ||
      (messages[i]?.role !== 'user' && messages[i]?.role !== 'assistant')
    )
      continue;
    const isMedia = (x: unknown) =>
      (x as { type?: unknown })?.type === 'image' || (x as { type?: unknown })?.type === 'file';
    // What one part costs is what the message's media cost shared out: good enough to stop early.
    const each = (w.cur.entries[i]?.mediaTokens ?? 0) / Math.max(1, content.filter(isMedia).length);
    for (let j = 0; j < content.length && excess > 0; j++) {
      const key = mediaKey(o, j);
      if (!isMedia(content[j]) || Object.hasOwn(media, key)) continue;
      media[key] = 1;
      changed = true;
      excess -= each;
    }
  }
  if (!changed) return;
  w.changed('hard-fit');
  if (w.cur.tokens > aim) replaceMediaUntil(w, aim, which);
}

/** Clips the text of the host's messages `which` accepts, largest first (water-filling), down to `aim`. */
function clipMessagesOf(w: Work, aim: number, which: (message: GuardMessage, origin: number) => boolean): void {
  // A few rounds: a clipped message keeps a little more than its level (markers, its parts'
  // shares), and a round measured on the clipped prompt closes the gap.
  for (let round = 0; round < 3 && w.cur.tokens > aim; round++) {
    const candidates: Array<{ index: number; chars: number }> = [];
    w.cur.view.messages.forEach((m, i) => {
      const o = w.cur.view.origin[i] ?? -1;
      // Tool outputs were shrunk above; system messages are never changed.
      if (o < 0 || m.role === 'system' || m.role === 'tool' || !which(m, o)) return;
      candidates.push({ index: i, chars: w.cur.entries[i]?.chars ?? 0 });
    });
    const excess = (w.cur.tokens - aim) / w.input.tokensPerChar;
    const level = levelWithMarkers(
      candidates.map((c) => c.chars),
      excess,
    );
    let changed = false;
    for (const c of candidates) {
      const key = String(w.input.hashOf(w.cur.view.origin[c.index] as number));
      const next = nextCut(w.memo.clips[key], c.chars, level);
      if (next === undefined) continue;
      w.memo.clips[key] = next;
      changed = true;
    }
    if (!changed) return;
    w.changed('hard-fit');
  }
}
