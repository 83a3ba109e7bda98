// One beforeModel call, stage by stage: check → measure → load → estimate → decide → (compare the
// whole history, compact under the session's lock) → record. The stages pass one value, the Turn,
// each reading what the ones before it found and adding its own part; the decision is made once,
// and made again only when what it was made on changed (a difference the history comparison found,
// a state another process moved on under the lock). The common call (the default in-memory store,
// no tokenizer to load, nothing to compact) runs every stage synchronously: no promise is made
// until the one the guard answers.
import type { BeforeModelInput, BeforeModelResult } from '../api.ts';
import type { Archive } from '../archive/archive.ts';
import { compact, type CompactionEnv, type CompactionOutcome } from '../compaction/compaction.ts';
import type { SessionState } from '../state/session.ts';
import { PromptMeasurer } from '../tokens/prompt-measure.ts';
import { compactionCall, needsCompaction, stateMovedOn } from './decide.ts';
import { PairingProgress, prepare } from './estimate.ts';
import { CheckedInputs } from './history.ts';
import { measurerKeys, type Call, type CallResolver } from './measure.ts';
import { recordCall, reportEstimate, type RecordContext } from './record.ts';
import { Turn } from './turn.ts';

/** What the stages need of the guard. */
export interface StagesEnv {
  ctx: RecordContext;
  resolver: CallResolver;
  archive: Archive;
  compaction: CompactionEnv;
}

/** The stages of every beforeModel call of a guard, with the per-session caches they keep. */
export class CallStages {
  private readonly env: StagesEnv;
  private readonly measurer: PromptMeasurer;
  private readonly history: CheckedInputs;
  private readonly pairing: PairingProgress;
  /** A compaction may hold its lock for all its summarizer calls, with room. */
  private readonly lockTtlMs: number;

  constructor(env: StagesEnv) {
    const { options } = env.ctx;
    this.env = env;
    this.measurer = new PromptMeasurer(options.maxSessions);
    this.history = new CheckedInputs(options.maxSessions, options.historyCheck);
    this.pairing = new PairingProgress(options.maxSessions);
    this.lockTtlMs = Math.max(30_000, options.compactionTimeoutMs + 10_000);
  }

  /**
   * The check: the entries of the host's array that are not messages left out (reported), the
   * history compared with the session's last one and handed on in canonical form.
   */
  check(input: BeforeModelInput, raw: readonly unknown[]): Turn {
    const { sessionId } = input;
    const checked = this.history.check(sessionId, raw);
    if (checked.dropped.length > 0)
      this.env.ctx.emit({ type: 'invalid-messages', sessionId, indices: checked.dropped, reasons: checked.reasons });
    const { messages } = checked;
    // The host's own input when nothing was left out (no copy of it on every call).
    return new Turn(messages === input.messages ? input : { ...input, messages }, raw, checked.canonical);
  }

  /** The stages after the check, as the session's only call in this process. */
  run(turn: Turn): BeforeModelResult | Promise<BeforeModelResult> {
    const { archive } = this.env;
    // Archive batches the store failed earlier are written before anything else leaves the prompt.
    if (archive.hasPending(turn.sessionId)) return archive.flush(turn.sessionId).then(() => this.measure(turn));
    return this.measure(turn);
  }

  forget(sessionId: string): void {
    for (const key of measurerKeys(sessionId)) this.measurer.forget(key);
    this.history.forget(sessionId);
    this.pairing.forget(sessionId);
  }

  private measure(turn: Turn): BeforeModelResult | Promise<BeforeModelResult> {
    const call = this.env.resolver.call(this.measurer, turn.input, turn.canonical);
    return call instanceof Promise ? call.then((measured) => this.load(turn, measured)) : this.load(turn, call);
  }

  private load(turn: Turn, call: Call): BeforeModelResult | Promise<BeforeModelResult> {
    turn.call = call;
    const state = this.env.ctx.sessions.load(turn.sessionId);
    return state instanceof Promise ? state.then((loaded) => this.decide(turn, loaded)) : this.decide(turn, state);
  }

  /** Estimate and decide; the common call is recorded at once. */
  private decide(turn: Turn, state: SessionState): BeforeModelResult | Promise<BeforeModelResult> {
    turn.state = state;
    turn.staleCompared = state.historyStale;
    this.estimate(turn);
    if (turn.staleCompared !== undefined || turn.compacts) return this.compact(turn);
    reportEstimate(this.env.ctx, turn);
    return recordCall(this.env.ctx, turn);
  }

  /** The estimate of the turn's call on its state, and the decision made on it. */
  private estimate(turn: Turn): void {
    const { call, state } = turn;
    turn.prepared = prepare(call, state, this.env.ctx.options.calibration, this.pairing);
    turn.compacts = needsCompaction(call, state, turn.prepared);
  }

  /**
   * A call that compacts, or whose history a real count far off its estimate marked as possibly
   * stale: the whole history compared first, then, across processes, one compaction per session at
   * a time. The others wait for its result and use it (the summary is in the shared state when they
   * read it again); they give up after two summarizer timeouts and compact on their own.
   */
  private async compact(turn: Turn): Promise<BeforeModelResult> {
    const compared = this.compareHistory(turn);
    if (compared) await compared;
    const { ctx } = this.env;
    reportEstimate(ctx, turn);
    if (!turn.compacts) return recordCall(ctx, turn);
    const waitMs = ctx.options.summarizerTimeoutMs * 2;
    const { release } = await ctx.sessions.lockCompaction(turn.sessionId, this.lockTtlMs, waitMs, () =>
      this.stillCompacts(turn),
    );
    try {
      const attempted = turn.compacts;
      const outcome = attempted ? await this.compactNow(turn) : undefined;
      // Committed under the lock (and its fence): a process waiting for it finds the new summary in
      // the state as soon as it may take the lock.
      return await recordCall(ctx, turn, { outcome, attempted });
    } finally {
      await release?.();
    }
  }

  /** The call into compaction's entry point, with the call, state and estimate of the turn. */
  private compactNow(turn: Turn): Promise<CompactionOutcome | undefined> {
    const { call, state, prepared } = turn;
    const env = this.env.compaction;
    return compact({ call: compactionCall(call, prepared), env, session: state, prepared, signal: turn.input.signal });
  }

  /**
   * A compaction decides on the whole history, and a stale-history mark says the view may be
   * stale: what the check took on trust is compared, and a difference found means a new measure,
   * estimate and decision (a promise only when the measure waits for a tokenizer).
   */
  private compareHistory(turn: Turn): Promise<void> | undefined {
    const { sessionId } = turn;
    const verified = this.history.verify(sessionId, turn.raw);
    if (!verified) return undefined;
    const { dropped, reasons } = verified;
    if (dropped.length > 0) this.env.ctx.emit({ type: 'invalid-messages', sessionId, indices: dropped, reasons });
    turn.input = { ...turn.input, messages: verified.messages };
    turn.canonical = verified.canonical;
    const call = this.env.resolver.call(this.measurer, turn.input, turn.canonical);
    if (call instanceof Promise) return call.then((measured) => this.estimateWith(turn, measured));
    this.estimateWith(turn, call);
    return undefined;
  }

  private estimateWith(turn: Turn, call: Call): void {
    turn.call = call;
    this.estimate(turn);
  }

  /**
   * Under the compaction lock: whether the call still compacts on the session's state as it is now
   * (another process may have compacted meanwhile). Estimated again only when the state moved on.
   */
  private async stillCompacts(turn: Turn): Promise<boolean> {
    const state = await this.env.ctx.sessions.load(turn.sessionId);
    const movedOn = stateMovedOn(turn.state, state);
    turn.state = state;
    if (movedOn) this.estimate(turn);
    return turn.compacts;
  }
}
