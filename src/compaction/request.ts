// The latest request: the one message the model must see whole. Finding it (a user's text that
// merely looks like the guard's own messages is a request), and telling whether a prompt has
// anything besides it that a compaction could still remove.
import type { GuardMessage } from '../messages.ts';
import type { View } from './memo.ts';
import { isContinuation, isOwnMessage, summaryBodyOf } from './placement.ts';

/**
 * The latest user message of the host's history that is a real request, not a summary the guard
 * wrote (`own`: the guard's own messages, see placement.ts; a user's text that merely looks like
 * one is a request).
 */
export function requestIndex(input: readonly GuardMessage[], own: readonly number[] | undefined): number {
  for (let i = input.length - 1; i >= 0; i--) {
    const m = input[i] as GuardMessage;
    if (m?.role === 'user' && !((summaryBodyOf(m) !== undefined || isContinuation(m)) && isOwnMessage(m, own)))
      return i;
  }
  return -1;
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
