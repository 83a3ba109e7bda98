// What the user wrote is what a summary must never lose, and what a weak summarizer (or the
// mechanical digest, which keeps the first characters of a message) loses first when the user's
// rules come after a pasted log. So the guard itself keeps every sentence the user wrote (prose.ts:
// prose, not pasted code, logs or data), verbatim, in a footer under every summary it writes,
// whoever wrote the summary and whatever became of the summarizer. Within a budget: the newest
// sentences are kept, each whole or not at all; those that do not fit are reported (per message)
// so that the host can tell, and they stay in the archive.
import type { GuardMessage } from '../messages.ts';
import { proseParagraphs } from './prose.ts';
import { userContentText } from './text.ts';

const FOOTER_OPEN =
  '[What the user wrote, verbatim (their own sentences; pasted code, logs and data left out), from the messages summarized so far:]';
/** The header of earlier versions, still read back from a summary a host kept. */
const OLD_FOOTER_OPEN = "[The user's instructions, verbatim, from the messages summarized so far:]";

/** A paragraph this short (a rule, a request, a reply) is what a footer keeps before long prose. */
const SHORT_PARAGRAPH_SENTENCES = 2;
const SHORT_PARAGRAPH_CHARS = 400;

interface Sentence {
  note: string;
  /** In a short paragraph of its own (a rule, a request, a reply), not in a long stretch of prose. */
  short: boolean;
}

/** The sentences of one user message, each once, in order; nothing for a message that is not the user's. */
function sentencesOf(message: GuardMessage, redact: (text: string) => string): Sentence[] {
  if (message?.role !== 'user') return [];
  const seen = new Set<string>();
  const out: Sentence[] = [];
  for (const paragraph of proseParagraphs(redact(userContentText(message.content)))) {
    const short =
      paragraph.length <= SHORT_PARAGRAPH_SENTENCES &&
      paragraph.reduce((n, s) => n + s.length, 0) <= SHORT_PARAGRAPH_CHARS;
    for (const note of paragraph) {
      const key = note.toLowerCase();
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ note, short });
    }
  }
  return out;
}

/**
 * The sentences the user wrote in one message (prose, not pasted code, logs or data), each once,
 * in order; `redact` runs on the message's whole text first (a secret assignment on a line of its
 * own is recognized there). Nothing for a message that is not the user's.
 */
export function instructionsOf(message: GuardMessage, redact: (text: string) => string = (t) => t): string[] {
  return sentencesOf(message, redact).map((s) => s.note);
}

/**
 * Room for the user's words under a summary, in characters: a quarter of the summary's budget, and
 * at least a twentieth of the window (a small window's summary budget would hold one or two).
 */
export function wordsBudget(maxSummaryTokens: number, contextWindow: number, tokensPerChar: number): number {
  return Math.floor(Math.max(0.25 * maxSummaryTokens, 0.05 * contextWindow) / tokensPerChar);
}

/** Sentences of one message that did not fit the footer. `index`: the message in the host's history, -1 for sentences kept under an earlier summary. */
export interface LostWords {
  index: number;
  sentences: number;
  chars: number;
}

export interface CollectedWords {
  /** The footer's notes, oldest first. */
  notes: string[];
  /** What did not fit, per message, oldest first. */
  lost: LostWords[];
}

/**
 * The notes so far with the sentences of `messages` added (each `{ message, index }`, `index` its
 * place in the host's history): each once, kept whole within `maxChars` of footer, and what was left
 * out (it stays in the archive). What goes in first: the new sentences of short paragraphs (a rule,
 * a request, a reply), newest first; then the notes kept so far, newest first; then the new
 * sentences of long stretches of prose, newest first. A sentence too long for what is left gives
 * way, and shorter ones may still fit. The footer lists what it keeps in the order it was written.
 */
export function collectInstructions(
  previous: readonly string[] | undefined,
  messages: ReadonlyArray<{ message: GuardMessage; index: number }>,
  maxChars: number,
  redact: (text: string) => string,
): CollectedWords {
  type Candidate = { note: string; index: number; tier: number; keep: boolean };
  const all: Candidate[] = (previous ?? []).map((note) => ({ note, index: -1, tier: 1, keep: false }));
  for (const { message, index } of messages)
    for (const { note, short } of sentencesOf(message, redact))
      all.push({ note, index, tier: short ? 0 : 2, keep: false });
  // Each once: its newest occurrence stands for it.
  const seen = new Set<string>();
  const unique: Candidate[] = [];
  for (let i = all.length - 1; i >= 0; i--) {
    const c = all[i] as Candidate;
    const key = c.note.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    unique.push(c);
  }
  // `unique` is newest first; a stable sort by tier keeps that order within each tier.
  const byPriority = [...unique].sort((a, b) => a.tier - b.tier);
  let used = FOOTER_OPEN.length;
  const lost = new Map<number, LostWords>();
  for (const c of byPriority) {
    if (used + c.note.length + 3 <= maxChars) {
      used += c.note.length + 3;
      c.keep = true;
      continue;
    }
    const entry = lost.get(c.index) ?? { index: c.index, sentences: 0, chars: 0 };
    entry.sentences++;
    entry.chars += c.note.length;
    lost.set(c.index, entry);
  }
  const notes = unique
    .filter((c) => c.keep)
    .reverse()
    .map((c) => c.note);
  return { notes, lost: [...lost.values()].sort((a, b) => a.index - b.index) };
}

/**
 * `summary` without the footer of the user's words at its end, and the notes of that footer
 * (undefined when it has none): a host that keeps the compacted history hands the guard its summary back.
 */
export function splitInstructionsFooter(summary: string): { body: string; notes: string[] | undefined } {
  const end = summary.trimEnd();
  for (const open of [FOOTER_OPEN, OLD_FOOTER_OPEN]) {
    const start = end.lastIndexOf(`${open}\n`);
    if (start < 0) continue;
    const lines = end.slice(start + open.length + 1).split('\n');
    if (!lines.every((l) => l.startsWith('- '))) continue;
    return { body: end.slice(0, start).trimEnd(), notes: lines.map((l) => l.slice(2)) };
  }
  return { body: summary, notes: undefined };
}

/** The footer under a summary; empty when there are no notes. Each note on one line (a sentence never holds a line break). */
export function renderInstructions(notes: readonly string[]): string {
  return notes.length === 0 ? '' : `${FOOTER_OPEN}\n${notes.map((n) => `- ${n}`).join('\n')}`;
}
