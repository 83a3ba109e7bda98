// What the user wrote is what a summary must never lose, and what a weak summarizer (or the
// mechanical digest, which keeps the first characters of a message) loses first when the user's
// rules come after a pasted log. So the guard itself keeps every sentence the user wrote (prose.ts:
// prose, not pasted code, logs or data), verbatim, in a footer under every summary it writes,
// whoever wrote the summary and whatever became of the summarizer. Within a budget: the newest
// sentences are kept, each whole or not at all; those that do not fit are reported (per message)
// so that the host can tell, and they stay in the archive.
import type { GuardMessage } from '../messages.ts';
import { proseSentences } from './prose.ts';
import { userContentText } from './text.ts';

const FOOTER_OPEN =
  '[What the user wrote, verbatim (their own sentences; pasted code, logs and data left out), from the messages summarized so far:]';
/** The header of earlier versions, still read back from a summary a host kept. */
const OLD_FOOTER_OPEN = "[The user's instructions, verbatim, from the messages summarized so far:]";

/**
 * The sentences the user wrote in one message (prose, not pasted code, logs or data), each once,
 * in order; `redact` runs on the message's whole text first (a secret assignment on a line of its
 * own is recognized there). Nothing for a message that is not the user's.
 */
export function instructionsOf(message: GuardMessage, redact: (text: string) => string = (t) => t): string[] {
  if (message?.role !== 'user') return [];
  const seen = new Set<string>();
  const out: string[] = [];
  for (const sentence of proseSentences(redact(userContentText(message.content)))) {
    const key = sentence.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(sentence);
  }
  return out;
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
 * place in the host's history): each once, kept whole, newest first while they fit `maxChars` of
 * footer (one that does not fit is left out and older, shorter ones may still fit; what is left out
 * stays in the archive), and what was left out.
 */
export function collectInstructions(
  previous: readonly string[] | undefined,
  messages: ReadonlyArray<{ message: GuardMessage; index: number }>,
  maxChars: number,
  redact: (text: string) => string,
): CollectedWords {
  const all: Array<{ note: string; index: number }> = (previous ?? []).map((note) => ({ note, index: -1 }));
  for (const { message, index } of messages)
    for (const note of instructionsOf(message, redact)) all.push({ note, index });
  const seen = new Set<string>();
  const kept: string[] = [];
  const lost = new Map<number, LostWords>();
  let used = FOOTER_OPEN.length;
  for (let i = all.length - 1; i >= 0; i--) {
    const { note, index } = all[i] as { note: string; index: number };
    const key = note.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    // A sentence too long for what is left gives way, and older, shorter ones may still fit.
    if (used + note.length + 3 <= maxChars) {
      used += note.length + 3;
      kept.push(note);
      continue;
    }
    const entry = lost.get(index) ?? { index, sentences: 0, chars: 0 };
    entry.sentences++;
    entry.chars += note.length;
    lost.set(index, entry);
  }
  return { notes: kept.reverse(), lost: [...lost.values()].sort((a, b) => a.index - b.index) };
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
