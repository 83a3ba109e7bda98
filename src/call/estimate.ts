// Estimate. The session's memo is re-applied to the host's messages (the summary and the edits of
// earlier compactions), tool pairing is repaired, and the prompt is estimated with the session's
// calibration (decide.ts then decides whether to compact). Pure but for the measurer's incremental
// caches and the pairing progress: no store, no events.
import type { Call } from './measure.ts';
import type { ResolvedCalibration } from '../config.ts';
import {
  applyRepair,
  renderView,
  replaceMedia,
  requestEditsDropped,
  type CompactionMemo,
  type View,
} from '../compaction/memo.ts';
import { requestIndex } from '../compaction/request.ts';
import { lastUnitStart, repairToolPairing } from '../compaction/structure.ts';
import { BoundedMap } from '../state/bounded.ts';
import type { SessionState } from '../state/session.ts';
import { compactionCalibration, estimate, oneOffJump, priceAfterReset, type Estimate } from '../tokens/calibration.ts';
import { CHARS_PER_TOKEN } from '../tokens/heuristic.ts';
import { extendsPrompt, type MeasuredPrompt } from '../tokens/prompt-measure.ts';

/** Everything a call works out from the session's state before deciding to compact. */
export interface Prepared {
  memo: CompactionMemo | undefined;
  /** Whether the memo's summary covers the start of the host's history. */
  summaryApplies: boolean;
  view: View;
  measured: MeasuredPrompt;
  /** Whether the prompt starts with the one the last real count measured. */
  extendsAnchor: boolean;
  est: Estimate;
  /** The memo was changed by this call (not by a compaction) and must be stored. */
  memoChanged?: boolean;
  /** The latest request is sent cut or without its media although, with only the fixed part, it would fit whole. */
  requestEdited?: boolean;
  /** Set when the fixed part of every prompt alone is over the threshold (see withFixedPart). */
  fixed?: FixedPart;
  /** Index of the latest request in the host's messages; -1 without a memo (no edit of it to weigh). */
  request: number;
  /** The anchor's response as this prompt holds it, and its output count (see PendingRequest.response). */
  response?: { heuristicTokens: number; outputTokens: number };
}

/** The fixed part of every prompt, when it alone is over the threshold, and the limit held instead. */
export interface FixedPart {
  /** System messages + tools + the invisible share, priced as after a compaction. */
  tokens: number;
  /** The invisible share alone: what the provider counts beyond the messages. */
  hidden: number;
  /** What prompts are held under instead of the threshold: half way from the fixed part to the window. */
  limit: number;
}

/**
 * Per session, the index before which the view's messages were checked and needed no tool-pairing
 * repair: the next call checks from there, so the cost follows what was added.
 */
export class PairingProgress {
  private readonly validUpTo: BoundedMap<string, number>;

  constructor(max: number) {
    this.validUpTo = new BoundedMap(max);
  }

  /** The index checked up to, forgotten until `set` (a call that repaired something checks again). */
  take(sessionId: string): number {
    const n = this.validUpTo.peek(sessionId) ?? 0;
    if (n > 0) this.validUpTo.set(sessionId, 0);
    return n;
  }

  set(sessionId: string, n: number): void {
    this.validUpTo.set(sessionId, n);
  }

  forget(sessionId: string): void {
    this.validUpTo.delete(sessionId);
  }
}

/** What renderView is given for the hashes of a view without a memo (it reads none). */
const NO_HASHES = (): number => 0;

/** The view `memo` makes of the host's messages, with the summary dropped when it no longer applies. */
function viewOf(call: Call, stored: CompactionMemo | undefined): Pick<Prepared, 'memo' | 'summaryApplies' | 'view'> {
  let memo = stored;
  let summaryApplies = false;
  if (memo?.summary) {
    summaryApplies = extendsPrompt(call.measureHost(), memo.summary.covers);
    if (!summaryApplies) {
      // The host's history no longer starts with what the summary covers (a new conversation on
      // this session id, or a host that stores the compacted history itself): it is stale.
      const { summary: _stale, ...rest } = memo;
      memo = rest;
    }
  }
  // The host's own array when nothing applies: what the guard sends unchanged is not copied.
  // The hashes are read only to apply a memo's clips: no function is bound for them without a memo.
  const hashOf = memo ? call.hashOf : NO_HASHES;
  return {
    memo,
    summaryApplies,
    view: renderView(call.hostMessages, memo, { summaryApplies, hashOf, repair: false, copy: false }),
  };
}

/**
 * The view measured. Untouched (no summary or edit applies): the host's messages, measured from
 * their canonical form, at the cost of what was added since the last call. Otherwise the same view,
 * rendered from the canonical form when the host rebuilt its messages: those the memo leaves alone
 * are then the objects measured last time, not copies to compare again. Tool pairing is repaired
 * from where it was last found valid (and the repaired view measured).
 */
function measuredView(
  call: Call,
  { memo, summaryApplies, view }: Pick<Prepared, 'memo' | 'summaryApplies' | 'view'>,
  pairing: PairingProgress,
): MeasuredPrompt {
  const hashOf = memo ? call.hashOf : NO_HASHES;
  const measured = view.untouched
    ? call.measureHostPrompt()
    : call.measure(
        call.canonicalInput
          ? renderView(call.canonicalInput, memo, { summaryApplies, hashOf, repair: false }).messages
          : view.messages,
      );
  const from = Math.min(pairing.take(call.sessionId), measured.unchanged);
  const repaired = repairToolPairing(view.messages, { from, copy: false });
  if (repaired.unansweredCalls + repaired.orphanResults === 0) {
    pairing.set(call.sessionId, lastUnitStart(view.messages));
    return measured;
  }
  applyRepair(view, repaired);
  view.untouched = false;
  return call.measure(view.messages);
}

/** The prompt `stored` makes of the host's messages, repaired and estimated. */
function prepareWith(
  call: Call,
  state: SessionState,
  stored: CompactionMemo | undefined,
  options: ResolvedCalibration,
  pairing: PairingProgress,
  request: number,
): Prepared {
  const rendered = viewOf(call, stored);
  const measured = measuredView(call, rendered, pairing);
  const anchor = state.calibration.anchor;
  const extendsAnchor = anchor !== undefined && extendsPrompt(measured, anchor.prompt);
  const response = extendsAnchor ? measured.entries[anchor.prompt.messages] : undefined;
  const responseChars = response?.message.role === 'assistant' ? response.chars : undefined;
  const est = estimate(measured, state.calibration, options, extendsAnchor ? { responseChars } : undefined);
  const { memo, summaryApplies, view } = rendered;
  const prepared: Prepared = {
    memo,
    summaryApplies,
    view,
    measured,
    extendsAnchor,
    est: jumpFloored(call, state, extendsAnchor, est),
    request,
  };
  // Set only when there (no spread of a conditional object: a slower copy, on every call).
  if (responseChars !== undefined && anchor?.outputTokens !== undefined)
    prepared.response = { heuristicTokens: responseChars / CHARS_PER_TOKEN, outputTokens: anchor.outputTokens };
  return prepared;
}

/**
 * A prompt that only grew since a real count is never estimated below that count (the provider
 * counted it), except for what a one-off jump would push over the threshold: a host that reported
 * the sum of several steps as one count must not make the guard compact on every call, so the
 * jump, at most an upper bound of the prompt, floors the estimate at the threshold and no higher.
 */
function jumpFloored(call: Call, state: SessionState, extendsAnchor: boolean, est: Estimate): Estimate {
  const anchor = state.calibration.anchor;
  if (!extendsAnchor || !anchor || oneOffJump(state.calibration, anchor.realTokens) === 0) return est;
  const floor = Math.min(anchor.realTokens, call.threshold);
  return est.tokens >= floor ? est : { ...est, tokens: floor };
}

/**
 * The prompt the session's state makes of the call's messages, and its estimate. The latest
 * request cut, or its images left out, to fit by an earlier compaction is sent whole again as soon
 * as it fits (the calibration learned the provider counts less than feared): its edits are dropped,
 * all of them or the cut alone, decided on the estimate the next calls will make of it too (or a
 * replay would compact again).
 */
export function prepare(
  call: Call,
  state: SessionState,
  options: ResolvedCalibration,
  pairing: PairingProgress,
): Prepared {
  const stored = state.memo;
  // Every memo tried below keeps the stored one's own messages: the same request for all of them.
  const request = stored ? requestIndex(call.hostMessages, stored.own, call.canonical) : -1;
  const prepared = withFixedPart(call, state, options, prepareWith(call, state, stored, options, pairing, request));
  if (!prepared.memo || request < 0) return prepared;
  let best = prepared;
  for (const keepMedia of [false, true]) {
    const relaxed = requestEditsDropped(prepared.memo, request, keepMedia);
    if (!relaxed) continue;
    const whole = withFixedPart(call, state, options, prepareWith(call, state, relaxed, options, pairing, request));
    if (whole.est.tokens > limitOf(call, whole)) continue;
    best = { ...whole, memoChanged: true };
    break;
  }
  return requestEditedCheck(call, state, options, best);
}

/**
 * `prepared`, marked when its memo still edits the latest request although the request alone
 * would fit: a compaction can make room for it (the steps before the last resort never touch the
 * request). Once per new information: a compaction that kept the edits decided on this very
 * history and calibration.
 */
function requestEditedCheck(
  call: Call,
  state: SessionState,
  options: ResolvedCalibration,
  prepared: Prepared,
): Prepared {
  const { memo, request } = prepared;
  const decided = memo?.requestDecided;
  const unchanged =
    decided?.request === request &&
    decided.messages === call.hostMessages.length &&
    decided.usage === state.usageRecorded;
  if (!memo || unchanged) return prepared;
  // The text cut although it fits without its media; media left out although they fit too.
  const cut = memo.requestClip?.index === request;
  const media = !cut && requestEditsDropped(memo, request) !== undefined;
  const fits = cut
    ? requestFitsAlone(call, state, options, prepared, { withMedia: false })
    : media && requestFitsAlone(call, state, options, prepared, { withMedia: true });
  return fits ? { ...prepared, requestEdited: true } : prepared;
}

/**
 * `prepared` with its fixed part when the prompt is over the threshold and the fixed part of every
 * prompt (system messages, tools, and the invisible share real counts revealed: a system prompt the
 * host keeps elsewhere) is over it too, priced as a compaction would price it. No compaction can
 * then bring the prompt under the threshold: compacting on every call would only cut away, call
 * after call, what the model just asked for. The prompt is held under a limit half way from the
 * fixed part to the window instead (room for the conversation and the answer alike).
 */
function withFixedPart(call: Call, state: SessionState, options: ResolvedCalibration, prepared: Prepared): Prepared {
  const window = call.contextWindow;
  if (window === undefined || prepared.est.tokens <= call.threshold) return prepared;
  const system = call.measureSystem();
  const price = priceAfterReset(plannedCalibration(state, options, prepared), options);
  const tokens = Math.ceil(price(system.chars, system.mediaTokens));
  // At or over the window, nothing fits: the compaction's last resort and its overflow event.
  if (tokens <= call.threshold || tokens >= window) return prepared;
  const hidden = Math.max(0, Math.round(price(0, 0)));
  const limit = Math.max(call.threshold, Math.floor(window - Math.max(0, window - tokens) / 2));
  prepared.fixed = { tokens, hidden, limit };
  return prepared;
}

/** The calibration a compaction of `prepared` would plan with (see compactionCalibration). */
function plannedCalibration(state: SessionState, options: ResolvedCalibration, prepared: Prepared) {
  const { est, measured } = prepared;
  return compactionCalibration(state.calibration, options, est.tokens, measured.chars, measured.mediaTokens);
}

/** What the prompt is held under: the threshold, or the limit when the fixed part alone is over it. */
export function limitOf(call: Call, prepared: Prepared): number {
  return prepared.fixed?.limit ?? call.threshold;
}

/**
 * Whether the system messages, tools and the latest request (its text whole; its media too, or
 * named instead) fit: priced as a compaction of `prepared` would price its smallest prompt.
 */
function requestFitsAlone(
  call: Call,
  state: SessionState,
  options: ResolvedCalibration,
  prepared: Prepared,
  { withMedia }: { withMedia: boolean },
): boolean {
  const { request } = prepared;
  const alone = call.measureApart(
    call.hostMessages.flatMap((m, i) => {
      if (m.role === 'system') return [m];
      if (i !== request) return [];
      return [withMedia ? m : replaceMedia(m, () => true)];
    }),
  );
  return (
    priceAfterReset(plannedCalibration(state, options, prepared), options)(alone.chars, alone.mediaTokens) <=
    call.threshold
  );
}
