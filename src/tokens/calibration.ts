// Turns the heuristic into a calibrated estimate with the provider's real counts, and folds each
// new real count into the session's calibration. Pure functions over plain state.
//
// Two corrections are kept:
// - the *ratio* real / heuristic of the anchor request (the seed's correction), used when a prompt
//   has to be estimated as a whole;
// - the *marginal* correction, the ratio of real to heuristic growth between consecutive anchored
//   requests. Providers count things with no visible text (their formatting, a hidden system
//   prompt): a constant share that inflates real / heuristic on small prompts. Growth cancels it,
//   so the marginal correction prices what was added since the anchor far better.
// Growth itself is fitted as a rate per heuristic token plus a cost per added message (see
// growthModel): what a provider wraps around each message and tool call is no text the heuristic
// sees, and priced at the rate it would make every small step look dear and every large one cheap.
// Beside the model, a margin for what no model of the visible messages can price: a host that adds
// content the guard never sees (a hook's output, a linter's note about a changed file) makes a
// real count jump past its estimate. The largest recent shortfall of the session is remembered
// (decayed at each real count), and a share of it is kept as headroom on anchored estimates: none
// where the estimates keep up (the guard sees the whole prompt), some where a host hides things.
import type { ResolvedCalibration } from '../config.ts';
import type { CalibrationState, PendingRequest, RequestMeasure } from '../state/session.ts';
import { CHARS_PER_TOKEN } from './heuristic.ts';

export interface Estimate {
  tokens: number;
  /** Plain chars/4 + media tokens. */
  heuristicTokens: number;
  correction: number;
  method: 'anchored' | 'scaled' | 'default';
}

/** Weight, in heuristic tokens, of the prior marginal correction. Tuned on bench/accuracy. */
const PRIOR_WEIGHT_TOKENS = 1_000;
/** Weight kept by older growth at each new real count: recent content types dominate. */
const GROWTH_DECAY = 0.7;
/**
 * Weight of the prior per-message cost (zero), in the unit of the fit's message term (messages² /
 * heuristic tokens): as much as one growth step of two messages and 400 heuristic tokens.
 */
const MESSAGE_PRIOR_WEIGHT = 0.01;
/**
 * A growth step teaches the rates at most this factor above or below what they predicted for it.
 * What goes beyond is no rate: a host's hidden prompt that grew (an attachment, a hook's output the
 * guard never saw) or a provider that dropped part of the history (earlier reasoning). The anchor
 * carries it, since it is in the real count; the rates, which price the next additions, do not.
 */
const STEP_OUTLIER_FACTOR = 2;
/**
 * Above its prediction, a step teaches the rates at most this factor: the excess is more likely
 * hidden content than a dearer rate (the anchor has it, and the shortfall margin keeps headroom for
 * the next one), while a real change of content still moves the rates by half again a step.
 */
const STEP_OVER_FACTOR = 1.5;
/** Share of the session's recent shortfall kept as headroom on anchored estimates. Tuned on bench/accuracy. */
const SHORTFALL_MARGIN = 0.2;
/** Weight the remembered shortfall keeps at each new real count. Tuned on bench/accuracy. */
const SHORTFALL_DECAY = 0.8;

/** Headroom for hidden additions, in tokens: a share of the session's recent shortfall. */
export function shortfallMargin(state: CalibrationState): number {
  return SHORTFALL_MARGIN * (state.shortfall ?? 0);
}

const clamp = (x: number, c: ResolvedCalibration): number => Math.min(c.max, Math.max(c.min, x));

/** real / heuristic of a request with a real count, clamped; media tokens are not calibrated. */
function ratioCorrection(
  anchor: CalibrationState['anchor'] | CalibrationState['reference'],
  c: ResolvedCalibration,
): number {
  if (!anchor || anchor.chars <= 0) return c.default;
  return clamp((anchor.realTokens - anchor.mediaTokens) / (anchor.chars / CHARS_PER_TOKEN), c);
}

/** Marginal correction before any growth was measured: the anchor's ratio, capped at the default. */
function priorCorrection(state: CalibrationState, c: ResolvedCalibration): number {
  // The ratio is an upper bound of the marginal rate (an invisible constant part only inflates it),
  // and on a session's first calls (a 26k-token hidden system prompt over a short conversation) it
  // sits at the 5.0 clamp; the default is a sane rate for text and code with most tokenizers.
  return Math.min(ratioCorrection(state.anchor ?? state.reference, c), c.default);
}

/**
 * Real tokens per heuristic token of what was added since the anchor, per-message costs included:
 * the ratio of the decayed growth sums. The sums start from the prior as pseudo-counts, so that a
 * few small early growth steps do not swing the estimate; the prior then fades like any old growth.
 * It prices whole prompts after a reset (the invisible part beside it then holds the anchor's
 * per-message costs too); additions are priced by growthModel.
 */
function marginalCorrection(state: CalibrationState, c: ResolvedCalibration): number {
  const g = state.growth;
  if (!g || g.heuristicTokens <= 0) return priorCorrection(state, c);
  return clamp(g.realTokens / g.heuristicTokens, c);
}

/** How an addition is priced: `rate` real tokens per heuristic token plus `perMessage` real tokens per message. */
export interface GrowthModel {
  rate: number;
  perMessage: number;
}

/**
 * The growth model: real = rate × heuristic + perMessage × messages, fitted on the decayed growth
 * steps by least squares weighted by 1 / heuristic (the weights that make the plain ratio of sums
 * the fit without a message term). The prior rate enters as a pseudo-step without messages, the
 * prior per-message cost (0) with MESSAGE_PRIOR_WEIGHT; before any growth, or with growth stored
 * without the message sums, the model is the plain marginal correction and no per-message cost.
 * A cost per message that comes out negative is no cost: the rate is then the plain ratio.
 */
export function growthModel(state: CalibrationState, c: ResolvedCalibration): GrowthModel {
  const g = state.growth;
  if (!g || g.heuristicTokens <= 0) return { rate: priorCorrection(state, c), perMessage: 0 };
  const messages = g.messages ?? 0;
  const load = (g.messageLoad ?? 0) + MESSAGE_PRIOR_WEIGHT;
  const messageReal = g.messageReal ?? 0;
  // Normal equations: realTokens = rate·heuristicTokens + perMessage·messages and
  // messageReal = rate·messages + perMessage·load. det > 0 (Cauchy-Schwarz, and the priors).
  const det = g.heuristicTokens * load - messages * messages;
  let rate = g.realTokens / g.heuristicTokens;
  let perMessage = 0;
  if (det > 0 && Number.isFinite(det)) {
    const b = (g.heuristicTokens * messageReal - messages * g.realTokens) / det;
    if (b > 0) {
      perMessage = b;
      rate = (g.realTokens * load - messages * messageReal) / det;
    }
  }
  const clamped = clamp(rate, c);
  // A rate held at a bound: the per-message cost that best fits with it.
  if (clamped !== rate && perMessage > 0) perMessage = Math.max(0, (messageReal - clamped * messages) / load);
  return { rate: clamped, perMessage };
}

/**
 * Estimate of a request. `extension` is set when the request starts with the anchor's prompt (see
 * extendsPrompt): then the anchor's real count is exact for that part, only the addition is
 * estimated (growthModel: its text at the rate, each added message at the per-message cost), the
 * result is never below the anchor's real count, and the shortfall margin is added on top. `responseChars` is the heuristic size of the
 * assistant message right after the anchor's prompt: the response whose output tokens the provider
 * reported, a real count for it too. Providers may drop part of it from later prompts (reasoning),
 * so the output count is a floor for the response's estimate (its text and its message), never a
 * replacement.
 */
export function estimate(
  request: RequestMeasure,
  state: CalibrationState,
  c: ResolvedCalibration,
  extension: { responseChars: number | undefined } | undefined,
): Estimate {
  const heuristic = request.chars / CHARS_PER_TOKEN;
  const heuristicTokens = heuristic + request.mediaTokens;
  const anchor = state.anchor;
  if (!anchor) {
    if (state.reference) {
      const tokens = Math.ceil(priceAfterReset(state, c)(request.chars, request.mediaTokens));
      return {
        tokens,
        heuristicTokens,
        correction: heuristic > 0 ? (tokens - request.mediaTokens) / heuristic : c.default,
        method: 'scaled',
      };
    }
    return {
      tokens: Math.ceil(heuristic * c.default + request.mediaTokens),
      heuristicTokens,
      correction: c.default,
      method: 'default',
    };
  }
  if (extension) {
    const { rate: correction, perMessage } = growthModel(state, c);
    const addedText = (request.chars - anchor.chars) / CHARS_PER_TOKEN;
    const addedMessages = Math.max(0, request.prompt.messages - anchor.prompt.messages);
    const addedMedia = request.mediaTokens - anchor.mediaTokens;
    let added = addedText * correction + addedMessages * perMessage + addedMedia;
    if (extension.responseChars !== undefined && anchor.outputTokens !== undefined) {
      const response = (extension.responseChars / CHARS_PER_TOKEN) * correction + perMessage;
      added += Math.max(0, anchor.outputTokens - response);
    }
    const base = anchor.realTokens - oneOffJump(state, anchor.realTokens);
    const tokens = Math.max(base, base + added) + shortfallMargin(state);
    return { tokens: Math.ceil(tokens), heuristicTokens, correction, method: 'anchored' };
  }
  // Not an extension of the anchor (an edited history, a request sent whole again): priced as a
  // compacted prompt is, so that the invisible share the counts showed is in it too.
  const tokens = Math.ceil(priceAfterReset(state, c)(request.chars, request.mediaTokens));
  return {
    tokens,
    heuristicTokens,
    correction: heuristic > 0 ? (tokens - request.mediaTokens) / heuristic : ratioCorrection(anchor, c),
    method: 'scaled',
  };
}

/**
 * Share of a count by which its invisible part may exceed the consistent one before it is read as a
 * one-off jump rather than content the guard cannot see (a hook's output, a linter's note, reasoning
 * the provider keeps: a few percent of the count, which the next count confirms anyway). A host that
 * sums two steps or more reports at least twice the prompt: a jump of half the count or more.
 */
const JUMP_SHARE = 0.4;

/**
 * The part of the anchor's count that is a one-off jump of its invisible share: over the share
 * consistent from call to call by more than JUMP_SHARE of the count (a host that reported the sum
 * of several steps as one count). At most an upper bound of the prompt, it is not carried into the
 * estimates built on the anchor; a jump the next count confirms becomes the consistent share.
 */
export function oneOffJump(state: CalibrationState, realTokens: number): number {
  const h = state.hidden;
  if (h?.consistent === undefined) return 0;
  const jump = h.last - Math.max(0, h.consistent);
  return jump > JUMP_SHARE * realTokens ? jump : 0;
}

/**
 * Visible sizes of two counted prompts far enough apart for their difference to show a rate: the
 * smaller at most this share of the larger (closer, per-message costs and noise would make it).
 */
const PAIR_SIZE_SHARE = 0.5;

/**
 * The rate two counts on either side of the guard's own compaction show, when no growth measured
 * one, and the previous count's share read at a given rate. Without growth, each count's share is
 * read at the prior rate (the ratio, capped at the default): a guess that, when it prices the
 * provider dearer than it is, reads the share of a large prompt as nothing, and the count of the
 * compacted prompt that followed as a one-off jump over it (6,761 hidden tokens, counted 9,358 beside
 * 6,154 visible then 7,353 beside 758: read 0 then 5,837, and the next compacted prompt estimated at
 * 3,790). The hidden share is the same on both sides and the visible text shrank: the difference of
 * the counts prices the text removed. That rate, held within the calibration's bounds and never above
 * the prior (a larger difference is no reason to read less share), reads both counts. A difference
 * under calibration.min (nothing, or less than nothing) is a count the bounds cannot explain with
 * one share: both are then read at the minimum, each at most its share, and the jump between them
 * stays a one-off (an upper bound), as it would have been.
 */
function acrossCompaction(
  state: CalibrationState,
  pending: PendingRequest,
  realTokens: number,
  c: ResolvedCalibration,
): { rate: number; share: (rate: number) => number } | undefined {
  const previous = state.reference;
  if (state.anchor || !previous || pending.extendsAnchor) return undefined;
  const before = previous.chars / CHARS_PER_TOKEN;
  const after = pending.chars / CHARS_PER_TOKEN;
  if (Math.min(before, after) > PAIR_SIZE_SHARE * Math.max(before, after)) return undefined;
  const counted = (previous.realTokens - previous.mediaTokens - (realTokens - pending.mediaTokens)) / (before - after);
  const rate = Math.max(c.min, Number.isFinite(counted) ? counted : c.min);
  return { rate, share: (r) => previous.realTokens - previous.mediaTokens - before * r };
}

/**
 * Heuristic tokens of measured responses the output counts must cover before they show a rate: on a
 * short response, what the heuristic counts and the provider does not (a tool call's id) or the
 * reverse (the framing of a tool call) would make it.
 */
const OUTPUT_MIN_TOKENS = 200;

/** The output sums with one more measured response, older ones decayed as growth is. */
function foldOutput(
  output: CalibrationState['output'],
  response: PendingRequest['response'],
): CalibrationState['output'] {
  if (!response || !(response.heuristicTokens > 0) || !(response.outputTokens > 0)) return output;
  return {
    realTokens: (output?.realTokens ?? 0) * GROWTH_DECAY + response.outputTokens,
    heuristicTokens: (output?.heuristicTokens ?? 0) * GROWTH_DECAY + response.heuristicTokens,
  };
}

/**
 * The rate the provider's output counts show: real tokens per heuristic token of the responses the
 * guard measured, with no invisible share in them. At most an upper bound of the rate it counts the
 * prompt's text at (reasoning the response does not show is in its output count), it caps the rate
 * shares are read at before growth measured one; undefined until enough was measured.
 */
function outputRate(state: CalibrationState): number | undefined {
  const o = state.output;
  return o && o.heuristicTokens >= OUTPUT_MIN_TOKENS ? o.realTokens / o.heuristicTokens : undefined;
}

/**
 * The counts whose shares are compared, kept with the readings (`recent`, aligned on the last):
 * [real tokens without media, visible heuristic tokens].
 */
type HiddenCount = [number, number];

/**
 * Folds a real count into the calibration: the pending request becomes the anchor, and when it
 * extended the previous anchor its growth, held between 1 / STEP_OUTLIER_FACTOR and
 * STEP_OVER_FACTOR of what the growth model predicted for it, updates the model's sums, and how
 * far the request's estimate fell short of the real count updates the shortfall.
 */
export function recordRealCount(
  state: CalibrationState,
  pending: PendingRequest,
  realTokens: number,
  outputTokens: number | undefined,
  c: ResolvedCalibration,
): CalibrationState {
  let growth = state.growth;
  const anchor = state.anchor;
  let shortfall = (state.shortfall ?? 0) * SHORTFALL_DECAY;
  if (anchor && pending.extendsAnchor) {
    // The estimate sent, margin included: a margin that covered the jump leaves no shortfall.
    if (pending.estimatedTokens > 0) shortfall = Math.max(shortfall, realTokens - pending.estimatedTokens);
    const addedHeuristic = (pending.chars - anchor.chars) / CHARS_PER_TOKEN;
    const addedMessages = Math.max(0, pending.prompt.messages - anchor.prompt.messages);
    const addedReal = realTokens - anchor.realTokens - (pending.mediaTokens - anchor.mediaTokens);
    if (addedHeuristic > 0 && addedReal > 0) {
      const before = growth ?? {
        realTokens: priorCorrection(state, c) * PRIOR_WEIGHT_TOKENS,
        heuristicTokens: PRIOR_WEIGHT_TOKENS,
      };
      const model = growthModel(state, c);
      const predicted = model.rate * addedHeuristic + model.perMessage * addedMessages;
      const learned = Math.min(Math.max(addedReal, predicted / STEP_OUTLIER_FACTOR), predicted * STEP_OVER_FACTOR);
      growth = {
        realTokens: before.realTokens * GROWTH_DECAY + learned,
        heuristicTokens: before.heuristicTokens * GROWTH_DECAY + addedHeuristic,
        messages: (before.messages ?? 0) * GROWTH_DECAY + addedMessages,
        messageLoad: (before.messageLoad ?? 0) * GROWTH_DECAY + (addedMessages * addedMessages) / addedHeuristic,
        messageReal: (before.messageReal ?? 0) * GROWTH_DECAY + (addedMessages * learned) / addedHeuristic,
      };
    }
  }
  const { chars, mediaTokens, toolChars, prompt } = pending;
  // Set only when known (a spread of a conditional object builds the anchor the slow way, on every real count).
  const anchorNext: NonNullable<CalibrationState['anchor']> = { chars, mediaTokens, toolChars, prompt, realTokens };
  if (outputTokens !== undefined) anchorNext.outputTokens = outputTokens;
  const next: CalibrationState = { anchor: anchorNext };
  if (growth) next.growth = growth;
  const output = foldOutput(state.output, pending.response);
  if (output) next.output = output;
  next.hidden = hiddenAfter(state, next, pending, realTokens, c);
  // Under one token it is noise, and the state stays as it was before any shortfall.
  if (shortfall >= 1) next.shortfall = shortfall;
  return next;
}

/**
 * The rate a count's invisible share is read at, with the prior it may stand below. Before growth
 * measured the rate, the prior is a guess (the ratio capped at the default): the rate the output
 * counts show, or the one two counts across a compaction show, reads the shares when lower (a
 * default that prices the provider dearer than it is reads a large share as nothing).
 */
function readingRate(
  state: CalibrationState,
  next: CalibrationState,
  pending: PendingRequest,
  realTokens: number,
  compared: boolean,
  c: ResolvedCalibration,
): { rate: number; prior: number; across?: ReturnType<typeof acrossCompaction> } {
  const prior = growthModel(next, c).rate;
  if (next.growth) return { rate: prior, prior };
  let rate = prior;
  const shown = outputRate(next);
  if (shown !== undefined && shown < rate) rate = Math.max(c.min, shown);
  const across = compared ? acrossCompaction(state, pending, realTokens, c) : undefined;
  if (across && across.rate < rate) rate = across.rate;
  return { rate, prior, across };
}

/**
 * The invisible share after a real count (`next` holds its anchor, growth and output sums): the
 * share it shows beyond the visible prompt, and the smallest of it and the previous ones. A host
 * that rewrote its history (the request does not extend the anchor: its own compaction, a new
 * conversation on the session) may show another share: the comparison starts again. Across the
 * guard's own compactions (no anchor, a reference) it goes on: the share does not shrink with the
 * visible prompt, and a count of the compacted prompt is what shows it is real. The last three
 * counts are compared: the smallest share of them is the consistent one, so that a host summing
 * one, two or three steps in turn never shows its sums as the share.
 */
function hiddenAfter(
  state: CalibrationState,
  next: CalibrationState,
  pending: PendingRequest,
  realTokens: number,
  c: ResolvedCalibration,
): NonNullable<CalibrationState['hidden']> {
  const rewritten = state.anchor !== undefined && !pending.extendsAnchor;
  const kept = rewritten ? undefined : state.hidden;
  if (kept !== undefined && next.growth !== undefined) {
    const steady = steadyHidden(kept, next, pending, realTokens, c);
    if (steady !== undefined) return steady;
  }
  const { chars, mediaTokens } = pending;
  // Read as the guard wrote them: a state read from the user's store was checked then
  // (state/session.ts, withReadableHidden), not on every count here.
  const earlier = kept ? (kept.recent ?? [kept.last]) : [];
  // The counts behind the last readings (none in states stored before they were kept).
  const storedCounts = kept?.counts ?? [];
  const known = Math.min(earlier.length, storedCounts.length);
  const { rate, prior, across } = readingRate(state, next, pending, realTokens, earlier.length > 0, c);
  const count: HiddenCount = [realTokens - mediaTokens, chars / CHARS_PER_TOKEN];
  const last = count[0] - count[1] * rate;
  // Every earlier count read again at this count's rate, so that the shares compare: a reading at an
  // earlier, dearer rate would otherwise hold the consistent share down for as long as it is kept.
  // Readings stored without their count stay as they were, but for the previous count across a
  // compaction (the reference's, read at the rate the two show). The arrays are literals of their
  // final length: this runs on every real count, and pushes onto an empty array would grow it and
  // change its kind of elements (to numbers that are not integers) each time.
  const n = earlier.length;
  const unknown = n - known;
  const reading: Rereading = { earlier, storedCounts, unknown, rate, prior, across };
  let recent: number[];
  let counts: HiddenCount[];
  if (n === 0) {
    recent = [last];
    counts = [count];
  } else if (n === 1) {
    recent = [rereadAt(0, reading), last];
    counts = unknown === 0 ? [storedCountAt(0, reading), count] : [count];
  } else {
    // The last two readings kept, then this count's.
    recent = [rereadAt(n - 2, reading), rereadAt(n - 1, reading), last];
    counts =
      n - 2 >= unknown
        ? [storedCountAt(n - 2, reading), storedCountAt(n - 1, reading), count]
        : n - 1 >= unknown
          ? [storedCountAt(n - 1, reading), count]
          : [count];
  }
  // What no rate can explain: the count beyond calibration.max × the visible text is invisible for
  // sure (a dense tokenizer stays under the bound), even seen through a single count.
  const sure = Math.max(0, realTokens - mediaTokens - (chars / CHARS_PER_TOKEN) * c.max);
  // The last two floors kept, then this count's.
  const kf = kept?.floors ?? [];
  const f = kf.length;
  const floors = f >= 2 ? [kf[f - 2] as number, kf[f - 1] as number, sure] : f === 1 ? [kf[0] as number, sure] : [sure];
  if (n === 0) return { last, recent, floors, counts };
  const consistent =
    n === 1 ? Math.min(recent[0] as number, last) : Math.min(recent[0] as number, recent[1] as number, last);
  return { last, consistent, recent, floors, counts };
}

/**
 * hiddenAfter on the count almost every call brings: growth measured (the readings are read at its
 * rate, nothing across a compaction), two readings or more kept, each with its count, and two
 * floors or more. The same values as the general way, on a path of its own: this runs on every real
 * count, and early in a process, before V8's top tier, a call's cost follows how much code it runs
 * (each call fetches most of its code again from beyond the first-level cache), not how many
 * instructions. Undefined for any other kept state.
 */
function steadyHidden(
  kept: NonNullable<CalibrationState['hidden']>,
  next: CalibrationState,
  pending: PendingRequest,
  realTokens: number,
  c: ResolvedCalibration,
): NonNullable<CalibrationState['hidden']> | undefined {
  const { recent: earlier, counts: stored, floors: kf } = kept;
  if (earlier === undefined || stored === undefined || kf === undefined) return undefined;
  const s = stored.length;
  const f = kf.length;
  if (earlier.length < 2 || s < earlier.length || f < 2) return undefined;
  const rate = growthModel(next, c).rate;
  const visible = pending.chars / CHARS_PER_TOKEN;
  const real = realTokens - pending.mediaTokens;
  const last = real - visible * rate;
  const a = stored[s - 2] as HiddenCount;
  const b = stored[s - 1] as HiddenCount;
  const ra = a[0] - a[1] * rate;
  const rb = b[0] - b[1] * rate;
  const sure = Math.max(0, real - visible * c.max);
  return {
    last,
    consistent: Math.min(ra, rb, last),
    recent: [ra, rb, last],
    floors: [kf[f - 2] as number, kf[f - 1] as number, sure],
    counts: [a, b, [real, visible]],
  };
}

/** What hiddenAfter re-reads the earlier readings with. */
interface Rereading {
  earlier: readonly number[];
  storedCounts: readonly HiddenCount[];
  /** How many of the first readings have no stored count. */
  unknown: number;
  rate: number;
  prior: number;
  across: ReturnType<typeof acrossCompaction>;
}

/** The stored count behind reading `i` (one with a count: i >= unknown). */
const storedCountAt = (i: number, r: Rereading): HiddenCount =>
  r.storedCounts[r.storedCounts.length - r.earlier.length + i] as HiddenCount;

/** Reading `i` at the rate of the new count (see hiddenAfter). */
function rereadAt(i: number, r: Rereading): number {
  if (i >= r.unknown) {
    const stored = storedCountAt(i, r);
    return stored[0] - stored[1] * r.rate;
  }
  return i === r.earlier.length - 1 && r.across && r.rate < r.prior ? r.across.share(r.rate) : (r.earlier[i] as number);
}

/**
 * The calibration after a compaction: the real count and the heuristic it anchored are dropped
 * (the compacted prompt no longer extends them), and the next real count starts a fresh anchor.
 * What they taught about the provider is kept as the reference until then, and the marginal rate
 * is kept, and so is the shortfall: they describe the provider, the host and the content, not the
 * prompt that was replaced.
 */
export function resetCalibration(state: CalibrationState, offset = 0): CalibrationState {
  const last = state.anchor ?? state.reference;
  const next: CalibrationState = {};
  if (state.growth) next.growth = state.growth;
  if (state.shortfall !== undefined) next.shortfall = state.shortfall;
  if (state.hidden !== undefined) next.hidden = state.hidden;
  if (state.output !== undefined) next.output = state.output;
  if (last)
    next.reference = {
      realTokens: last.realTokens,
      chars: last.chars,
      mediaTokens: last.mediaTokens,
      ...(offset > 0 ? { offset } : {}),
    };
  return next;
}

/**
 * How a prompt that extends no real count is priced once the calibration was reset: the larger
 * of the reference's ratio × heuristic (the seed's correction) and a constant part plus the
 * marginal rate × heuristic. A compacted prompt is much smaller than the reference, and whatever
 * a provider counts invisibly (its own system prompt) does not shrink with it: the ratio alone
 * would undercount it. Without a reference, the default correction. Compaction plans with this
 * same function, so the next call estimates the compacted prompt exactly as it was planned.
 */
export function priceAfterReset(
  state: CalibrationState,
  c: ResolvedCalibration,
): (chars: number, mediaTokens: number) => number {
  const ref = state.anchor ?? state.reference;
  if (!ref) return (chars, media) => (chars / CHARS_PER_TOKEN) * c.default + media;
  const ratio = ratioCorrection(ref, c);
  const marginal = marginalCorrection(state, c);
  // The invisible part is real − marginal × heuristic, which needs a measured marginal rate: from
  // a single real count, a dense tokenizer (CJK, a provider counting 3 tokens per 4 characters)
  // and a hidden system prompt look alike, and reading the former as the latter would price a
  // compacted prompt as if it could never fit. It may be negative: the reference's prompt then
  // costs less per token than what was added to it (a large system prompt of plain prose, tool
  // steps dense with JSON), and a compacted prompt is the reference's minus what was removed,
  // priced at the marginal rate; clamped at zero, the system prompt alone would be priced at the
  // marginal rate (a 22k-token system prompt priced over a 32k window: a compaction every call).
  // A share consistent over the last two counts is real, with or without a measured rate (two
  // counts of a compacted prompt, no growth between them); the latest count's share alone is at
  // most an upper bound of it (a host that reported the sum of several steps as one count).
  const consistent = state.hidden?.consistent;
  const measured = state.growth
    ? ref.realTokens - ref.mediaTokens - (ref.chars / CHARS_PER_TOKEN) * marginal
    : Number.NEGATIVE_INFINITY;
  let invisible = state.growth ? measured : 0;
  if (consistent !== undefined)
    invisible = state.growth ? Math.min(measured, Math.max(0, consistent)) : Math.max(0, consistent);
  // Never below what the recent counts show is invisible for sure (their smallest: a one-off jump is
  // at most an upper bound); none shown leaves a negative part as it is.
  const floor = state.hidden?.floors?.length ? Math.min(...state.hidden.floors) : 0;
  if (floor > 0) invisible = Math.max(invisible, floor);
  const offset = state.anchor ? 0 : (state.reference?.offset ?? 0);
  return (chars, media) =>
    Math.max((chars / CHARS_PER_TOKEN) * ratio, invisible + (chars / CHARS_PER_TOKEN) * marginal) + media + offset;
}

/** Provider tokens per heuristic character at most, after a reset: sizes budgets in characters. */
export function tokensPerCharAfterReset(state: CalibrationState, c: ResolvedCalibration): number {
  const ref = state.anchor ?? state.reference;
  if (!ref) return c.default / CHARS_PER_TOKEN;
  return Math.max(ratioCorrection(ref, c), marginalCorrection(state, c)) / CHARS_PER_TOKEN;
}

/**
 * Tokens a provider may count beyond calibration.max × the heuristic: an invisible constant part
 * (a hidden system prompt, tool definitions the host keeps out of the guard's sight). Claude Code's
 * is ~26k on a 200k window; half the window (at least 8k, 100k when no window is known) leaves room
 * for far larger ones, while still rejecting counts no request could cost.
 */
function invisibleAllowance(contextWindow: number | undefined): number {
  return contextWindow === undefined ? 100_000 : Math.max(8_000, contextWindow / 2);
}

/**
 * The input tokens a request could plausibly have cost. A count outside this range is a provider or
 * adapter bug (a corrupted number, a count that excludes the cache), and one such count would
 * otherwise anchor every later estimate: far too high, it makes each call compact the history away;
 * far too low, it sends prompts over the window.
 * - at most the window, whatever the visible text: a count the provider accepted within the window
 *   is real (a hidden system prompt of 26k tokens over 2k of visible text in a 32k window);
 * - beyond the window (a `contextWindow` set below the model's own), at most calibration.max × the
 *   text's heuristic + twice the media estimate + an invisible part, and at most twice the window
 *   plus that part (no provider answers a prompt far over its window);
 * - at least a fiftieth of the text's heuristic, checked only on prompts large enough for the ratio
 *   to mean something. Far lower counts are real too (a provider package that drops what the guard
 *   counted, such as thinking blocks whose signature an edit removed): only absurd ones are refused.
 */
export function plausibleInputRange(
  request: RequestMeasure,
  c: ResolvedCalibration,
  contextWindow: number | undefined,
): { min: number; max: number } {
  const text = request.chars / CHARS_PER_TOKEN;
  const allowance = invisibleAllowance(contextWindow);
  const byEstimate = c.max * text + 2 * request.mediaTokens + allowance;
  const byWindow = contextWindow === undefined ? Number.POSITIVE_INFINITY : 2 * contextWindow + allowance;
  const min = text >= 1_000 ? Math.floor(text / 50) : 1;
  const beyond = Math.min(byEstimate, Math.max(byWindow, 2 * request.mediaTokens + allowance));
  return { min, max: Math.ceil(Math.max(contextWindow ?? 0, beyond)) };
}

/**
 * Output tokens a response could plausibly have cost: twice the window, at least 200k (long
 * reasoning runs past small windows' share); 1M when no window is known.
 */
export function plausibleOutputMax(contextWindow: number | undefined): number {
  return contextWindow === undefined ? 1_000_000 : Math.max(2 * contextWindow, 200_000);
}

/**
 * The calibration a compaction plans with, and leaves behind: reset (see resetCalibration), with
 * what the current estimate knew beyond the reset pricing (the part of a single real count no model
 * of growth explains yet) carried as an offset, so that no compaction stops short of its target.
 * `tokens` is the current estimate of the prompt measured as `chars` and `mediaTokens`.
 */
export function compactionCalibration(
  state: CalibrationState,
  c: ResolvedCalibration,
  tokens: number,
  chars: number,
  mediaTokens: number,
): CalibrationState {
  const base = priceAfterReset(resetCalibration(state), c);
  // What the estimate holds beyond the reset pricing (a share seen through a single count, or a
  // one-off jump of it: at most an upper bound) plans this compaction and prices the compacted
  // prompt until its own real count; only a share consistent from call to call outlives that.
  const offset = Math.max(0, tokens - Math.ceil(base(chars, mediaTokens)));
  return resetCalibration(state, offset);
}
