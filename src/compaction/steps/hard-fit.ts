// Step 3: when pruning and the summary were not enough (a single tool result larger than the
// window, a giant recent turn), what matters least is cut down to the target first: the largest
// tool outputs, then images and files (oldest first, named by a placeholder), then assistant text,
// then the user's earlier messages. The latest request is never among them.
import type { GuardMessage } from '../../messages.ts';
import { mediaKey } from '../media-placeholder.ts';
import { outputChars } from '../prune.ts';
import { MIN_KEPT_CHARS, waterLevel, type Work } from '../work.ts';

export function hardFit(w: Work): void {
  const request = w.request;
  if (!w.under()) shrinkToolOutputs(w);
  if (!w.under()) replaceMediaUntil(w, w.settings.target, (o) => o !== request);
  if (!w.under()) clipMessagesOf(w, (m) => m.role === 'assistant');
  if (!w.under()) clipMessagesOf(w, (m, o) => m.role === 'user' && o !== request);
}

/** The largest tool outputs, cut evenly (water-filling) down to the target. */
function shrinkToolOutputs(w: Work): void {
  const results = w.toolResults();
  const excess = (w.cur.tokens - w.settings.target) / w.p.tokensPerChar;
  const level = waterLevel(results.map((r) => outputChars(r.part)), excess, MIN_KEPT_CHARS);
  let changed = false;
  for (const { part, key } of results) {
    if (outputChars(part) > level) {
      w.memo.tools[key] = level;
      changed = true;
    }
  }
  if (changed) w.changed('hard-fit');
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
    if (o < 0 || !which(o) || !Array.isArray(content) || (messages[i]?.role !== 'user' && messages[i]?.role !== 'assistant')) continue;
    const isMedia = (x: unknown) => (x as { type?: unknown })?.type === 'image' || (x as { type?: unknown })?.type === 'file';
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

/** Clips the text of the host's messages `which` accepts, largest first (water-filling), down to the target. */
function clipMessagesOf(w: Work, which: (message: GuardMessage, origin: number) => boolean): void {
  // A few rounds: a clipped message keeps a little more than its level (markers, its parts'
  // shares), and a round measured on the clipped prompt closes the gap.
  for (let round = 0; round < 3 && !w.under(); round++) {
    const candidates: Array<{ index: number; chars: number }> = [];
    w.cur.view.messages.forEach((m, i) => {
      const o = w.cur.view.origin[i] ?? -1;
      // Tool outputs were shrunk above; system messages are never changed.
      if (o < 0 || m.role === 'system' || m.role === 'tool' || !which(m, o)) return;
      candidates.push({ index: i, chars: w.cur.entries[i]?.chars ?? 0 });
    });
    const excess = (w.cur.tokens - w.settings.target) / w.p.tokensPerChar;
    const level = waterLevel(candidates.map((c) => c.chars), excess, MIN_KEPT_CHARS);
    let changed = false;
    for (const c of candidates) {
      if (c.chars <= level) continue;
      const key = String(w.p.hashOf(w.cur.view.origin[c.index] as number));
      const next = Math.min(w.memo.clips[key] ?? Number.POSITIVE_INFINITY, level);
      if (next === w.memo.clips[key]) continue;
      w.memo.clips[key] = next;
      changed = true;
    }
    if (!changed) return;
    w.changed('hard-fit');
  }
}
