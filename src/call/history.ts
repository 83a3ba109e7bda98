// The history comparison: each call's messages compared with the session's last ones, once, by
// identity or by content (a host that rebuilds its objects), amortized over calls for a long
// history; what is found the same is not checked or measured again.
import type { GuardMessage } from '../messages.ts';
import { BoundedMap } from '../state/bounded.ts';
import { MessageKeys, type CanonicalMessages, type LatestRequestFound } from '../tokens/prompt-measure.ts';
import { validMessages, type ValidatedMessages } from './check.ts';

/**
 * How far `input` has the same messages as those `keys` describes (`canon`, in canonical form)
 * from `from` on, below `limit`: the same object, or one the host rebuilt around the same content
 * (see MessageKeys). An entry that cannot even be compared (a getter that throws) ends the run: it
 * is checked as a new entry.
 */
function sameUpTo(
  keys: MessageKeys,
  canon: readonly GuardMessage[],
  input: readonly unknown[],
  from: number,
  limit: number,
): number {
  try {
    return keys.matching(input, canon, from, limit);
  } catch {
    // Compared again one by one, to find the entry that throws: checked from there (problemOf catches).
    let i = from;
    try {
      while (i < limit && keys.matching(input, canon, i, i + 1) === i + 1) i++;
    } catch {
      // Entry i cannot be read.
    }
    return i;
  }
}

/**
 * Messages at the start of the history compared on every call (with any further leading system
 * messages): a new conversation on the same session id shows there first.
 */
export const HEAD_MESSAGES = 4;
/**
 * The last messages known before a call, compared on every call: where hosts edit (a retry, a
 * rewritten last step). An edit further back is found by the rotating slice.
 */
export const BOUNDARY_MESSAGES = 8;
/**
 * Older messages compared per call, in rotation, when the host resends its message objects (one
 * identity comparison each): each is compared again at least every ceil(N / this) calls.
 */
export const SLICE_MESSAGES = 64;
/**
 * The same, when the host rebuilt its messages on the last call (the AI SDK): each comparison then
 * reads the host's freshly built objects, which its own rebuild has pushed out of the processor's
 * caches (about 15-25 ns a message at 2,550 messages, BENCHMARKS.md). Each message is compared again
 * at least every ceil(N / this) calls.
 */
export const REBUILT_SLICE_MESSAGES = 16;

/** A session's last input whose entries were all messages. */
interface CheckedHistory {
  /** For each position, the object first seen there with that content (an array that only grows). */
  canon: GuardMessage[];
  /** The content fields of `canon`'s messages, to compare rebuilt messages with. */
  keys: MessageKeys;
  /** Where the next rotating slice of older messages starts. */
  cursor: number;
  /** The last check matched some messages by content (the host rebuilds them): the smaller slice. */
  rebuilt: boolean;
  /** Whether every message of the last input was compared (none of it taken on trust). */
  verified: boolean;
  /** The latest request found in `canon` (see requestIndex), handed over with it; a new array starts a new one. */
  latestRequest: LatestRequestFound;
}

/** How far an input is the same as the session's last one. */
interface Comparison {
  /** Leading entries found (or, in amortized mode, taken) the same. */
  same: number;
  /** Some of them were matched by content: the host rebuilds its messages. */
  rebuilt: boolean;
  /** Every one of them was compared (none taken on trust). */
  verified: boolean;
}

/** What the input check found: the messages, and how far they were compared. */
export interface CheckedInput extends ValidatedMessages {
  /** Leading entries found the same as the last call's; the input's length when nothing changed. */
  unchanged: number;
  /**
   * The input in canonical form, for the measure of this very array: set when every entry was a
   * message and the input is remembered (see CheckedInputs).
   */
  canonical?: CanonicalMessages;
}

/**
 * Remembers, per session, the last input whose entries were all messages, in canonical form: for
 * each position, the object first seen there with that content. The next call compares its
 * messages with it, by identity when the host resends its objects, by content fields when it
 * rebuilt them (the AI SDK: one comparison per field of each part, never a walk of the values),
 * and checks only the entries after the first that differs.
 *
 * In `amortized` mode (the default) a long history is not compared whole on every call: only the
 * first messages, the last BOUNDARY_MESSAGES known before, and a rotating slice of the others
 * (every message again at least every ceil(N / SLICE_MESSAGES) calls, ceil(N /
 * REBUILT_SLICE_MESSAGES) for a host that rebuilds its messages), then what was added. A
 * difference found anywhere compares everything. The rest is taken on trust until its turn, and
 * `verify` compares it all when the call must be exact (before a compaction decides anything).
 * What is taken on trust only feeds the estimate: the prompt sent is always built from the host's
 * own objects (estimate.ts renders the view from them), so an edit not yet found may skew the
 * estimate for a few calls but never reverts the host's edit.
 *
 * The canonical array only grows (an edit or a removal starts a new one from a copy of the
 * unchanged part), so its first `n` entries never change once handed out, whatever later calls
 * add. It is handed to the call that measures this input (CheckedInput.canonical, passed to
 * measure.ts): the measures of earlier calls hold for the entries they covered, and those are not
 * looked at again.
 */
export class CheckedInputs {
  private readonly last: BoundedMap<string, CheckedHistory>;
  private readonly amortized: boolean;

  constructor(max: number, historyCheck: 'amortized' | 'full' = 'amortized') {
    this.last = new BoundedMap(max);
    this.amortized = historyCheck === 'amortized';
  }

  /** Checks `input` against the session's last one; `compareAll`: none of it taken on trust (see verify). */
  check(sessionId: string, input: readonly unknown[], options?: { compareAll: boolean }): CheckedInput {
    const history = this.last.peek(sessionId);
    const compared = this.compare(history, input, options);
    const { same } = compared;
    const checked = validMessages(input, same, history?.canon);
    // Nothing of an input with entries left out is remembered: the next call checks every entry again.
    const canonical = checked.dropped.length > 0 ? undefined : this.remember(sessionId, history, input, compared);
    if (!canonical) {
      this.last.delete(sessionId);
      return { ...checked, unchanged: same };
    }
    return {
      messages: checked.messages,
      dropped: checked.dropped,
      reasons: checked.reasons,
      unchanged: same,
      canonical,
    };
  }

  /**
   * How far `input` is the same as the session's last input: the sampled messages alone for a long
   * history in amortized mode (the rest taken on trust), else everything, by identity up to the
   * first object that differs, then by content.
   */
  private compare(
    history: CheckedHistory | undefined,
    input: readonly unknown[],
    options: { compareAll: boolean } | undefined,
  ): Comparison {
    if (!history) return { same: 0, rebuilt: false, verified: true };
    const { canon, keys } = history;
    const known = canon.length;
    const n = input.length;
    const sampling = this.amortized && options?.compareAll !== true && n >= known;
    if (sampling && known > HEAD_MESSAGES + BOUNDARY_MESSAGES + SLICE_MESSAGES) {
      const sampled = sample(history, input);
      if (sampled !== undefined) return { same: known, rebuilt: sampled, verified: false };
    }
    const limit = Math.min(n, known);
    let same = 0;
    while (same < limit && input[same] === canon[same]) same++;
    const identical = same;
    if (same < limit) same = sameUpTo(keys, canon, input, same, limit);
    return { same, rebuilt: same > identical, verified: true };
  }

  /**
   * Remembers `input` (all of its entries messages) in canonical form, and answers that form;
   * undefined when a field cannot be read twice (a hostile getter): nothing is then remembered, the
   * next call checks everything again, and this one measures the input as it is.
   */
  private remember(
    sessionId: string,
    history: CheckedHistory | undefined,
    input: readonly unknown[],
    { same, rebuilt, verified }: Comparison,
  ): CanonicalMessages | undefined {
    const canon = history?.canon;
    // Grown in place when only new entries follow the known ones; otherwise a new array.
    const next = canon && same === canon.length ? canon : (canon?.slice(0, same) ?? []);
    const keys = history?.keys ?? new MessageKeys();
    keys.truncate(same);
    const n = input.length;
    try {
      for (let i = same; i < n; i++) {
        next.push(input[i] as GuardMessage);
        keys.push(input[i] as GuardMessage);
      }
    } catch {
      return undefined;
    }
    const kept: CheckedHistory = history ?? { canon: next, keys, cursor: 0, rebuilt, verified, latestRequest: {} };
    if (kept.canon !== next) kept.latestRequest = {};
    kept.canon = next;
    kept.rebuilt = rebuilt;
    kept.verified = verified;
    this.last.set(sessionId, kept);
    return { messages: next, length: n, rebuilt, latestRequest: kept.latestRequest };
  }

  /**
   * Compares every message of `input`, the array the session's last check took partly on trust
   * (see check): undefined when all of them are the same (or nothing was taken on trust); else the
   * input checked again from the first message that differs, with its canonical form replaced.
   */
  verify(sessionId: string, input: readonly unknown[]): CheckedInput | undefined {
    const history = this.last.peek(sessionId);
    if (!history || history.verified || history.canon.length !== input.length) return undefined;
    const checked = this.check(sessionId, input, { compareAll: true });
    return checked.unchanged === input.length && checked.dropped.length === 0 ? undefined : checked;
  }

  forget(sessionId: string): void {
    this.last.delete(sessionId);
  }
}

/**
 * Whether `input`'s first messages, the last BOUNDARY_MESSAGES known before and the next rotating
 * slice of the others are the same as the known ones: undefined when one differs (or cannot be
 * read), else whether any of them was matched by content rather than identity (a rebuilt history).
 * Advances the rotation.
 */
function sample(history: CheckedHistory, input: readonly unknown[]): boolean | undefined {
  const { canon, keys } = history;
  const known = canon.length;
  let head = HEAD_MESSAGES;
  while (head < known && keys.roleOf(head) === 'system') head++;
  const boundary = Math.max(head, known - BOUNDARY_MESSAGES);
  const from = history.cursor >= head && history.cursor < boundary ? history.cursor : head;
  // As many more as the call added: the rotation gains a full slice on the history's growth on every
  // call, however fast the host adds messages, so that it comes round within ceil(N / slice) calls.
  const size = (history.rebuilt ? REBUILT_SLICE_MESSAGES : SLICE_MESSAGES) + (input.length - known);
  const to = Math.min(boundary, from + size);
  const head0 = sameRun(history, input, 0, head);
  if (head0 === undefined) return undefined;
  const last = sameRun(history, input, boundary, known);
  if (last === undefined) return undefined;
  const slice = sameRun(history, input, from, to);
  if (slice === undefined) return undefined;
  history.cursor = to >= boundary ? head : to;
  return head0 || last || slice;
}

/**
 * Whether `input` has the known messages from `start` to `end`: undefined when one differs, else
 * whether any was matched by content rather than identity.
 */
function sameRun(history: CheckedHistory, input: readonly unknown[], start: number, end: number): boolean | undefined {
  const { canon, keys } = history;
  let i = start;
  while (i < end && input[i] === canon[i]) i++;
  if (i === end) return false;
  return sameUpTo(keys, canon, input, i, end) === end ? true : undefined;
}
