// The Turn: one beforeModel call as the stages of src/call/ see it (stages.ts runs them in order).
import type { BeforeModelInput } from '../api.ts';
import type { SessionState } from '../state/session.ts';
import type { CanonicalMessages } from '../tokens/prompt-measure.ts';
import type { Prepared } from './estimate.ts';
import type { Call } from './measure.ts';

/**
 * One beforeModel call as the stages see it. The check makes it; `call` is set by the measure,
 * `state` by the load, `prepared` and `compacts` by the estimate and the decision: a stage reads
 * only what the stages before it set.
 */
export class Turn {
  readonly sessionId: string;
  /** The check: the host's input with the entries that are not messages left out (its own object when none were). */
  input: BeforeModelInput;
  /** The host's array as it came: what the history comparison compares again before a compaction. */
  readonly raw: readonly unknown[];
  /** The check: the canonical form of `input.messages` the history check handed over, if it kept one. */
  canonical: CanonicalMessages | undefined;
  /** The measure: the call's window, threshold and measures. */
  call!: Call;
  /** The load: the session's state the estimate is made on. */
  state!: SessionState;
  /** The stale-history mark the load found (SessionState.historyStale): the whole history is compared for it. */
  staleCompared: number | undefined = undefined;
  /** The estimate: the prompt the session's memo makes of the messages, and its tokens. */
  prepared!: Prepared;
  /** The decision: whether this call compacts. */
  compacts = false;

  constructor(input: BeforeModelInput, raw: readonly unknown[], canonical: CanonicalMessages | undefined) {
    this.sessionId = input.sessionId;
    this.input = input;
    this.raw = raw;
    this.canonical = canonical;
  }
}
