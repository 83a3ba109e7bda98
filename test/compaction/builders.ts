// Builders for the compaction tests: readable filler text, chat histories of a known size, a
// recording summarizer, and helpers to find the summary and the kept tail in an output.
import type { GuardMessage, SummarizerInput } from '../../src/index.ts';
import { assistant, system, user } from '../helpers.ts';

const FILLER = 'lorem ipsum dolor sit amet consectetur adipiscing elit ';

/**
 * `label` followed by filler words, about `chars` characters in all (never less than the label).
 * Labels make each message recognizable in a digest or a summarizer prompt; the spaces keep it
 * from looking like base64. No trailing whitespace: a continuation quotes a request trimmed.
 */
export function text(label: string, chars: number): string {
  const fill = chars - label.length - 1;
  if (fill <= 0) return label;
  return `${label} ${FILLER.repeat(Math.ceil(fill / FILLER.length)).slice(0, fill)}`.trimEnd();
}

export const SYSTEM = system('You are a careful coding agent.');
export const FIRST_REQUEST = 'U0 first request: migrate the billing service to Postgres.';

export interface Chat {
  messages: GuardMessage[];
  first: GuardMessage;
  latest: GuardMessage;
}

/**
 * [system, small first request, then `pairs` × (assistant A<i>, user U<i>) of `chars` characters].
 * The last user message is the latest request (replaced by `latest` when given). With a
 * 20k window, 6 pairs of 4,000 characters are ~18k estimated tokens: over the 16k threshold.
 */
export function chat(pairs: number, chars: number, latest?: string, prefix = ''): Chat {
  const first = user(FIRST_REQUEST);
  const messages: GuardMessage[] = [SYSTEM, first];
  for (let i = 1; i <= pairs; i++) {
    messages.push(assistant(text(`${prefix}A${i}`, chars)));
    messages.push(user(i === pairs && latest !== undefined ? latest : text(`${prefix}U${i}`, chars)));
  }
  return { messages, first, latest: messages[messages.length - 1] as GuardMessage };
}

/** `history` plus `pairs` more exchanges labelled with `prefix` (a stateless host's next request). */
export function grow(history: readonly GuardMessage[], prefix: string, pairs: number, chars: number): GuardMessage[] {
  return [...history, ...chat(pairs, chars, undefined, prefix).messages.slice(2)];
}

export const SUMMARY_PREFIX = '[Context Summary]';

export function contentText(message: GuardMessage): string {
  if (typeof message.content === 'string') return message.content;
  return JSON.stringify(message.content);
}

export const isSummary = (m: GuardMessage): boolean =>
  m.role === 'user' && typeof m.content === 'string' && m.content.startsWith(SUMMARY_PREFIX);

/** Index of the (single) summary message, or -1. */
export function summaryIndex(messages: readonly GuardMessage[]): number {
  return messages.findIndex(isSummary);
}

/** Text of the summary message; fails loudly when there is none. */
export function summaryOf(messages: readonly GuardMessage[]): string {
  const m = messages.find(isSummary);
  if (!m) throw new Error(`no ${SUMMARY_PREFIX} message in the output`);
  return m.content as string;
}

/**
 * The kept tail of a keep-recent output: the messages after the summary and the continuation
 * (the last user-role message the guard wrote at or after the summary).
 */
export function keptTail(input: readonly GuardMessage[], output: readonly GuardMessage[]): GuardMessage[] {
  const s = summaryIndex(output);
  if (s < 0) return [];
  // The tail is the longest suffix of the output whose messages are the input's own objects.
  let n = 0;
  while (n < output.length - s - 1 && output[output.length - 1 - n] === input[input.length - 1 - n]) n++;
  return output.slice(output.length - n);
}

export type Answer = string | { text: string };

/** A summarizer that records every input; `answer` decides each reply (default: a short summary). */
export function recordingSummarizer(
  answer: (input: SummarizerInput, call: number) => Answer | Promise<Answer> = (_i, n) =>
    `## Task state\nsummary #${n}`,
) {
  const calls: SummarizerInput[] = [];
  const replies: Answer[] = [];
  return {
    calls,
    replies,
    summarizer: async (input: SummarizerInput): Promise<Answer> => {
      calls.push(input);
      const reply = await answer(input, calls.length);
      replies.push(reply);
      return reply;
    },
  };
}

/** Rough provider count of `messages` at `ratio` × chars/4: what a test feeds back as "real" usage. */
export function realTokens(messages: readonly GuardMessage[], ratio: number): number {
  const chars = messages.reduce(
    (n, m) => n + 12 + (typeof m.content === 'string' ? m.content.length : JSON.stringify(m.content).length),
    0,
  );
  return Math.max(1, Math.ceil((ratio * chars) / 4));
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Exactly `chars` characters of filler words (fewer when the cut ends on a space). */
export const filler = (chars: number): string =>
  FILLER.repeat(Math.ceil(chars / FILLER.length))
    .slice(0, chars)
    .trimEnd();

/** One turn: a user request, an assistant step that reads a file, the file, the assistant's answer. */
export function turn(i: number, userChars: number, toolChars: number): GuardMessage[] {
  return [
    { role: 'user', content: `request-${i}: ${filler(userChars)}` },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: `Reading the file for request ${i}. ${filler(300)}` },
        { type: 'tool-call', toolCallId: `c${i}`, toolName: 'read_file', input: { path: `src/file-${i}.ts` } },
      ],
    },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: `c${i}`,
          toolName: 'read_file',
          output: { type: 'text', value: `file ${i} ${filler(toolChars)}` },
        },
      ],
    },
    { role: 'assistant', content: `Done with request ${i}. ${filler(500)}` },
  ];
}
