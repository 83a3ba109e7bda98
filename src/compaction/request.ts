// The latest request: the one message the model must see whole. Finding it (a user's text that
// merely looks like the guard's own messages is a request), and telling whether a prompt has
// anything besides it that a compaction could still remove.
import type { GuardMessage } from '../messages.ts';
import type { CanonicalMessages } from '../tokens/prompt-measure.ts';
import type { View } from './memo.ts';
import { isContinuation, isOwnMessage, summaryBodyOf } from './placement.ts';

const sameOwn = (a: readonly number[] | undefined, b: readonly number[] | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && a.length === b.length && a.every((k, i) => k === b[i]));

const isRequest = (m: GuardMessage | undefined, own: readonly number[] | undefined): boolean =>
  m?.role === 'user' && !((summaryBodyOf(m) !== undefined || isContinuation(m)) && isOwnMessage(m, own));

/**
 * The latest user message of the host's history that is a real request, not a summary the guard
 * wrote (`own`: the guard's own messages, see placement.ts; a user's text that merely looks like
 * one is a request). Given the history's canonical form the input check handed over for `input`
 * (`canonical`, Call.canonical), the messages it had up to the last call are not looked at again
 * (they are the same, or taken on trust as the estimate takes them until a compaction compares
 * them all).
 */
export function requestIndex(
  input: readonly GuardMessage[],
  own: readonly number[] | undefined,
  canonical?: CanonicalMessages,
): number {
  // The answer for the canonical form's array, held with it (its first `upTo` messages never change
  // once handed out): a later call on the same array only looks at the messages added since, not back
  // to a request that may lie thousands of tool steps behind (a one-request agent run read every
  // message on every call).
  const holder = canonical !== undefined && canonical.length === input.length ? canonical.latestRequest : undefined;
  const known = holder?.found;
  const floor = known && known.upTo <= input.length && sameOwn(known.own, own) ? known.upTo : 0;
  let index = -1;
  for (let i = input.length - 1; i >= floor; i--) {
    if (isRequest(input[i], own)) {
      index = i;
      break;
    }
  }
  if (index < 0 && known && floor > 0) index = known.index;
  if (holder) holder.found = { upTo: input.length, index, own };
  return index;
}

/**
 * Whether compaction has anything left to work on in this prompt: a message from the host's
 * history other than system messages and the latest request. When the prompt is over the
 * threshold with nothing of the kind (the smallest prompt was sent), compacting again cannot help
 * until the host adds something.
 */
export function hasCompactable(view: View, request: number): boolean {
  const { messages, origin } = view;
  // The kept head counts too: a request kept by the smallest prompt is an old message once a new one came.
  for (let i = 0; i < messages.length; i++) {
    const o = origin[i] ?? -1;
    if (o >= 0 && o !== request && messages[i]?.role !== 'system') return true;
  }
  return false;
}
