// Step 4, when even hard fit leaves the prompt over the threshold (or the system messages, tools
// and the request's text are over it from the start): the smallest prompt, the system messages and
// the latest request, with the latest tool step when its results fit beside them, nothing else. What leaves the prompt is folded into the summary's text as a
// digest: not sent now, but the next summary builds on it. Then, only as far as needed: the
// request's own images and files, oldest first; its text, only when it alone exceeds what is left
// of the window (it is the one message the model must see whole).
import type { GuardMessage } from '../../messages.ts';
import { collectInstructions, type LostWords, wordsBudget } from '../instructions.ts';
import { mechanicalDigest } from '../mechanical.ts';
import { redactedMessages } from '../summarizer-input.ts';
import { MIN_KEPT_CHARS, type Work } from '../work.ts';
import { replaceMediaUntil } from './hard-fit.ts';

/** Whether the result is an overflow: over the threshold, or the request had to be cut. */
export function lastResort(w: Work): boolean {
  smallestPrompt(w, { keepLatest: w.latest.protected });
  w.changed('hard-fit');
  // The latest tool step was measured to fit beside the request; should the rendered prompt still
  // be over (a repair, a rounding), it goes too: the smallest prompt must fit if anything does.
  if (w.latest.protected && w.cur.tokens > w.input.threshold) {
    smallestPrompt(w, { keepLatest: false });
    w.changed('hard-fit');
  }
  // What now stands for the older messages, though not sent: the digest the next summary builds on.
  if (w.memo.summary?.text) {
    w.stats.summary = w.memo.summary.text;
    w.stats.summaryTokens = Math.ceil(w.memo.summary.text.length * w.input.tokensPerChar);
  }
  if (w.cur.tokens > w.input.threshold) replaceMediaUntil(w, w.input.threshold, (o) => o === w.request);
  // A request that had to be cut is an overflow too: the event tells the host it was not sent whole.
  const cut = w.cur.tokens > w.input.contextWindow && fitRequest(w);
  return cut || w.cur.tokens > w.input.threshold;
}

/** The smallest prompt; `keepLatest`: with the latest tool step, whose results fit beside the request. */
function smallestPrompt(w: Work, { keepLatest }: { keepLatest: boolean }): void {
  const { input, memo, cur, request } = w;
  // The latest tool step (from the last assistant message on) stays when its results fit with the
  // system messages and the request (see Work.latest): the model asked for them.
  const end = keepLatest ? w.latest.from : input.hostMessages.length;
  const systems: number[] = [];
  input.hostMessages.forEach((m, i) => {
    if (m?.role === 'system' && i < end) systems.push(i);
  });
  const leaving: GuardMessage[] = [];
  const indices: number[] = [];
  cur.view.messages.forEach((m, i) => {
    const o = cur.view.origin[i] ?? -1;
    // The host's own words, not the placeholders and cuts of this compaction.
    if (o >= 0 && o < end && o !== request && m.role !== 'system') {
      leaving.push(input.hostMessages[o] as GuardMessage);
      indices.push(o);
    }
  });
  let text = memo.summary?.text ?? '';
  // The user's words of the messages leaving join those kept so far: the summary that is not sent
  // now carries them to the next one. None is in this prompt: reported.
  const budget = wordsBudget(input.settings.maxSummaryTokens, input.contextWindow, input.tokensPerChar);
  const words = collectInstructions(
    memo.summary?.instructions,
    leaving.map((message, k) => ({ message, index: indices[k] as number })),
    budget,
    input.redact,
  );
  reportWordsNotSent(w, words, budget);
  if (leaving.length > 0) {
    const maxChars = Math.floor(input.settings.maxSummaryTokens / input.tokensPerChar);
    // Redacted before the digest flattens and cuts them, as the summarizer's transcript is; the
    // digest's text once more (the previous summary in it, redacted when stored, is unchanged by it).
    const digest = mechanicalDigest(redactedMessages(leaving, input.redact), {
      ...(text ? { previousSummary: text } : {}),
      maxChars,
    });
    text = input.redact(digest.text);
    input.onDigestLoss(digest.lostMessages, digest.lostUserMessages);
  }
  // Clip-archive batches are folded into the digest's text: the next summary starts from it.
  delete memo.batches;
  memo.summary = {
    covers: input.prefixOf(end),
    keep: request >= 0 && request < end ? [...systems, request] : systems,
    messages: [],
    text,
    ...(memo.summary?.fileOps ? { fileOps: memo.summary.fileOps } : {}),
    ...(words.notes.length > 0 ? { instructions: words.notes } : {}),
  };
}

/**
 * The user's words of the messages leaving: none is in this prompt, those kept under the summary
 * that is not sent included (index -1). Reported by message.
 */
function reportWordsNotSent(
  w: Work,
  words: { lost: readonly LostWords[]; notes: readonly string[] },
  budget: number,
): void {
  const notSent = new Map<number, LostWords>();
  for (const l of words.lost) notSent.set(l.index, { ...l });
  if (words.notes.length > 0) {
    const kept = notSent.get(-1) ?? { index: -1, sentences: 0, chars: 0 };
    kept.sentences += words.notes.length;
    kept.chars += words.notes.reduce((n, s) => n + s.length, 0);
    notSent.set(-1, kept);
  }
  if (notSent.size > 0)
    w.input.onUserWordsLost(
      [...notSent.values()].sort((a, b) => a.index - b.index),
      budget,
    );
}

/**
 * Cuts the request (head and tail kept, a marker saying how much was left out) until the prompt is
 * under the threshold. Characters are measured the way the guard prices them (exact counting makes
 * a character of emoji or CJK cost more than a letter), so the cut is re-measured and tightened
 * until it fits, a few rounds at most. Whether the request was cut.
 */
function fitRequest(w: Work): boolean {
  const { request } = w;
  if (request < 0 || w.cur.view.origin.indexOf(request) < 0) return false;
  let chars = textLength(w.input.hostMessages[request] as GuardMessage);
  // The last cut and what the prompt cost with it: from the second round on, the prompt's own cost
  // per character cut (a compacted prompt is priced as a whole, with its invisible share, so a
  // character of the request saves less than its own estimate says) sets the next cut.
  let previous: { chars: number; tokens: number } | undefined;
  for (let round = 0; round < 8 && w.cur.tokens > w.input.threshold && chars > MIN_KEPT_CHARS; round++) {
    const over = w.cur.tokens - w.input.threshold;
    let next: number;
    if (previous && previous.chars > chars && previous.tokens > w.cur.tokens) {
      const perChar = (previous.tokens - w.cur.tokens) / (previous.chars - chars);
      next = Math.floor((chars - over / perChar) * 0.97) - 100;
    } else {
      const requestTokens = w.messageTokens(w.cur.view.origin.indexOf(request));
      const keepShare = requestTokens > 0 ? Math.max(0, (requestTokens - over) / requestTokens) : 0;
      next = Math.floor(chars * keepShare * 0.95) - 100;
    }
    previous = { chars, tokens: w.cur.tokens };
    chars = Math.max(MIN_KEPT_CHARS, next);
    w.memo.requestClip = { index: request, chars };
    w.cur = w.render();
  }
  return w.memo.requestClip?.index === request;
}

/** Characters of a message's text parts (what a clip works on). */
function textLength(message: GuardMessage): number {
  const content = message.content as unknown;
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) if (part?.type === 'text' && typeof part.text === 'string') n += part.text.length;
  return n;
}
