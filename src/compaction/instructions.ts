// What the user told the agent to do or not to do is what a summary must never lose, and what a
// weak summarizer (or the mechanical digest, which keeps the first 200 characters of a message)
// loses first when the instruction comes after a pasted log. So the guard itself keeps the user's
// instruction sentences, verbatim, in a footer under every summary it writes, whoever wrote the
// summary: sentences of the summarized user messages that carry a directive word (never, always,
// must, don't, avoid, ...), outside code blocks and code-like lines. Bounded: the newest are kept.
import type { GuardMessage } from '../messages.ts';
import { userContentText } from './text.ts';

/**
 * Words that mark a rule (`do not` as two words): a message's rules go before its other instructions.
 * Only strong words make a sentence an instruction: `should`, `only` or `please` are as common in
 * plain prose as in instructions, and a footer full of prose would push the real instructions out.
 */
const RULES = new Set([
  'never',
  'always',
  'must',
  "mustn't",
  'mustn’t',
  "don't",
  'don’t',
  'dont',
  'forbidden',
  'avoid',
]);

/** Words (and pairs of words) that make a sentence an instruction that is not a rule. */
const INSTRUCTIONS = new Set(['ensure', 'keep', 'remember', 'important', 'required', 'cannot', "can't", 'can’t']);
const PAIRS = [
  ['make', 'sure'],
  ['no', 'longer'],
  ['from', 'now'],
];

/** Longest note kept whole: an instruction is a sentence, not a paragraph. */
const MAX_NOTE_CHARS = 300;
/** At most this many notes are taken from one message (a pasted style guide is not a list of instructions). */
const MAX_NOTES_PER_MESSAGE = 6;

const FOOTER_OPEN = "[The user's instructions, verbatim, from the messages summarized so far:]";

/** 0: not an instruction; 1: an instruction; 2: a rule (never, always, must, do not...). */
function strength(sentence: string): number {
  const words = sentence.toLowerCase().split(/[^\p{L}'’]+/u);
  let found = 0;
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string;
    if (RULES.has(w) || (w === 'do' && words[i + 1] === 'not')) return 2;
    if (INSTRUCTIONS.has(w)) found = 1;
    for (const [a, b] of PAIRS) if (w === a && words[i + 1] === b) found = 1;
  }
  return found;
}

/** A line that reads as code or a log, not as something the user wrote to the agent. */
function looksLikeCode(line: string): boolean {
  const t = line.trim();
  return (
    /^( {4}|\t)/.test(line) ||
    /[{};]$/.test(t) ||
    /^(import|export|const|let|var|function|return|class|def|if|for|while|at|#include)\b/.test(t) ||
    /^[\w.]+(Error|Exception)\b/.test(t) ||
    /^\[?\d{4}-\d\d-\d\d/.test(t)
  );
}

/** The instruction sentences of one user message, each once, in order; rules first when there are too many. */
export function instructionsOf(message: GuardMessage): string[] {
  if (message.role !== 'user') return [];
  const text = userContentText(message.content);
  const found: Array<{ note: string; strength: number; order: number }> = [];
  const seen = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.trimStart().startsWith('```')) {
      fenced = !fenced;
      continue;
    }
    if (fenced || looksLikeCode(line)) continue;
    for (const raw of line.split(/(?<=[.!?])\s+/)) {
      const sentence = raw.trim();
      if (sentence.length < 8) continue;
      const s = strength(sentence);
      const key = sentence.toLowerCase();
      if (s === 0 || seen.has(key)) continue;
      seen.add(key);
      const note = sentence.length > MAX_NOTE_CHARS ? `${sentence.slice(0, MAX_NOTE_CHARS)}…` : sentence;
      found.push({ note, strength: s, order: found.length });
    }
  }
  return found
    .sort((a, b) => b.strength - a.strength || a.order - b.order)
    .slice(0, MAX_NOTES_PER_MESSAGE)
    .sort((a, b) => a.order - b.order)
    .map((f) => f.note);
}

/**
 * The notes so far with those of `messages` added: each once, the newest kept within `maxChars`
 * (the oldest dropped first; they stay in the archive).
 */
export function collectInstructions(
  previous: readonly string[] | undefined,
  messages: readonly GuardMessage[],
  maxChars: number,
  redact: (text: string) => string,
): string[] {
  const all = [...(previous ?? []), ...messages.flatMap(instructionsOf).map(redact)];
  const seen = new Set<string>();
  const unique: string[] = [];
  for (let i = all.length - 1; i >= 0; i--) {
    const note = all[i] as string;
    const key = note.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    unique.push(note);
  }
  const kept: string[] = [];
  let used = FOOTER_OPEN.length;
  for (const note of unique) {
    if (used + note.length + 3 > maxChars) break;
    used += note.length + 3;
    kept.push(note);
  }
  return kept.reverse();
}

/**
 * `summary` without an instructions footer at its end, and the notes of that footer (undefined when
 * it has none): a host that keeps the compacted history itself hands the guard its summary back.
 */
export function splitInstructionsFooter(summary: string): { body: string; notes: string[] | undefined } {
  const end = summary.trimEnd();
  const start = end.lastIndexOf(`${FOOTER_OPEN}\n`);
  if (start < 0) return { body: summary, notes: undefined };
  const lines = end.slice(start + FOOTER_OPEN.length + 1).split('\n');
  if (!lines.every((l) => l.startsWith('- '))) return { body: summary, notes: undefined };
  return { body: end.slice(0, start).trimEnd(), notes: lines.map((l) => l.slice(2)) };
}

/** The footer under a summary; empty when there are no notes. */
export function renderInstructions(notes: readonly string[]): string {
  return notes.length === 0 ? '' : `${FOOTER_OPEN}\n${notes.map((n) => `- ${n}`).join('\n')}`;
}
