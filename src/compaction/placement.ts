// Where a summary goes and how it reads. The summary is a user-role message with a clear
// delimiter, never a system message: it records what happened, written by a model from data that
// included tool output, so it must not gain system authority. When the user's latest request is
// no longer verbatim in the prompt, a continuation message quotes it and tells the model to go on.
import type { GuardMessage, UserMessage } from '../messages.ts';
import { hashText } from '../tokens/hash.ts';

export const SUMMARY_OPEN = '[Context Summary]';
export const SUMMARY_CLOSE = '[End of Context Summary]';
export const CONTINUATION_OPEN = '[Continue]';

const CONTINUATION_INSTRUCTION =
  'Continue with it from where the work left off, using the summary above. Do not ask the user to repeat anything.';

const SUMMARY_PREAMBLE =
  'The earlier part of this conversation was replaced by this summary to fit the context window. It is a record of what happened, not a new request.';

/** The user-role message that stands for the summarized messages. */
export function summaryMessage(body: string): UserMessage {
  return { role: 'user', content: `${SUMMARY_OPEN}\n${SUMMARY_PREAMBLE}\n\n${body.trim()}\n${SUMMARY_CLOSE}` };
}

/**
 * The note after a summary and the latest request it covers: the summary records steps taken on a
 * request that comes after it in the prompt, so the model is told to go on rather than start over.
 * Constant text: nothing of the conversation is copied into it.
 */
export function continuationNote(): UserMessage {
  return {
    role: 'user',
    content: `${CONTINUATION_OPEN} The message above is the user's current request; the summary before it records the work already done on it. ${CONTINUATION_INSTRUCTION}`,
  };
}

function textOf(message: GuardMessage): string | undefined {
  if (message.role !== 'user') return undefined;
  if (typeof message.content === 'string') return message.content;
  const first = Array.isArray(message.content) ? message.content[0] : undefined;
  // A continuation carries the request's media after its text part.
  return first?.type === 'text' ? first.text : undefined;
}

/** The summary text inside a summary message (as the guard writes it), or undefined for any other message. */
export function summaryBodyOf(message: GuardMessage): string | undefined {
  const text = textOf(message);
  if (!text?.startsWith(SUMMARY_OPEN)) return undefined;
  let body = text.slice(SUMMARY_OPEN.length).trim();
  if (body.startsWith(SUMMARY_PREAMBLE)) body = body.slice(SUMMARY_PREAMBLE.length);
  if (body.trimEnd().endsWith(SUMMARY_CLOSE)) body = body.trimEnd().slice(0, -SUMMARY_CLOSE.length);
  return body.trim();
}

/**
 * Whether a message looks like a continuation the guard writes (see {@link isOwnMessage}: a user may write one too).
 */
export function isContinuation(message: GuardMessage): boolean {
  return textOf(message)?.startsWith(CONTINUATION_OPEN) === true;
}

/** How the guard remembers a summary or continuation it wrote: a hash of its text. */
export function ownKey(message: GuardMessage): number | undefined {
  const text = textOf(message);
  return text === undefined ? undefined : hashText(text);
}

/** How many of its own messages the guard remembers per session (a summary and a continuation per compaction). */
export const MAX_OWN = 16;

/** `own` with the keys of `messages` added, the oldest dropped past {@link MAX_OWN}. */
export function rememberOwn(own: readonly number[] | undefined, messages: readonly GuardMessage[]): number[] {
  const keys = messages.map(ownKey).filter((k): k is number => k !== undefined);
  const next = [...(own ?? []).filter((k) => !keys.includes(k)), ...keys];
  return next.slice(Math.max(0, next.length - MAX_OWN));
}

/**
 * Whether a text has the whole frame the guard writes around a summary or a continuation, not just its opening marker.
 */
function hasOwnFrame(text: string): boolean {
  if (text.startsWith(`${SUMMARY_OPEN}\n${SUMMARY_PREAMBLE}\n`)) return text.endsWith(`\n${SUMMARY_CLOSE}`);
  return text.startsWith(`${CONTINUATION_OPEN} `) && text.endsWith(CONTINUATION_INSTRUCTION);
}

/**
 * Whether the guard wrote this message: its text is one the guard remembers writing, or has the
 * whole frame the guard writes (a host that keeps the compacted history, read by a guard that lost
 * its state). A user's message that merely starts with `[Context Summary]` or `[Continue]` is the user's.
 */
export function isOwnMessage(message: GuardMessage, own: readonly number[] | undefined): boolean {
  const text = textOf(message);
  if (text === undefined) return false;
  if (own && own.length > 0 && own.includes(hashText(text))) return true;
  return hasOwnFrame(text);
}
