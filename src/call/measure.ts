// What one model call is measured against: its window and threshold (from the options, the host,
// the model registry, or the fallback, never above a limit the provider named), how its text is
// counted, and the measures of its messages. Problems with the configuration surface here, once
// each, as events; the call goes on.
import { DEFAULTS, MIN_CONTEXT_WINDOW, thresholdFor, type ResolvedOptions } from '../config.ts';
import type { ContextGuardEvent } from '../events.ts';
import type { GuardMessage, ToolDefinition } from '../messages.ts';
import { CHARACTER_MEASURE, encodingFor, textMeasure, type TextMeasure } from '../tokens/exact.ts';
import { mediaProviderForModel } from '../tokens/media.ts';
import type { CanonicalMessages, MeasuredPrompt, PromptMeasurer } from '../tokens/prompt-measure.ts';
import { BoundedMap } from '../state/bounded.ts';
import { matchingOverride, resolveModelInfo } from '../tokens/windows.ts';

/** One beforeModel call: its messages, its window, and how its prompts are measured. */
export interface Call {
  sessionId: string;
  /** The host's messages (entries that are not messages already left out). */
  hostMessages: readonly GuardMessage[];
  tools: readonly ToolDefinition[] | undefined;
  /** Always known: the option, the host's, the registry's, or the fallback (see CallResolver.window). */
  contextWindow: number;
  threshold: number;
  /** A prompt measured with the tools, incrementally against this session's previous prompt. */
  measure: (messages: GuardMessage[]) => MeasuredPrompt;
  /**
   * The host's messages as they are, measured as the prompt (what `measure` gives for a copy of
   * them), from their canonical form when the input check handed one over: then only the messages
   * added since the last such measure are looked at.
   */
  measureHostPrompt: () => MeasuredPrompt;
  /**
   * The host's messages in canonical form (for each, the object first seen with its content), when
   * the host rebuilt some of them: a prompt rendered from these measures without comparing them again.
   */
  canonicalInput?: readonly GuardMessage[];
  /**
   * The canonical form the history check handed over for `hostMessages` (see CheckedInputs), when
   * it kept one: what was measured or looked at for it on earlier calls holds for its first entries.
   */
  canonical?: CanonicalMessages | undefined;
  /** The host's messages measured on their own (fingerprints and hashes for the memo). */
  measureHost: () => MeasuredPrompt;
  /** Content hash of host message i. */
  hashOf: (index: number) => number;
  /** Messages measured with the tools, apart from the session's prompt (not to disturb its incremental measure). */
  measureApart: (messages: GuardMessage[]) => MeasuredPrompt;
  /** The host's system messages with the tools, measured apart once per call (the fixed part of every prompt). */
  measureSystem: () => SizeOf;
}

/** What a prompt measures to, on its own (no entries: it outlives the measurer's next measure). */
export interface SizeOf {
  chars: number;
  mediaTokens: number;
}

/**
 * A host's window the guard takes: a finite number of tokens, at least the minimum (below it, a placeholder or a
 * fraction).
 */
export function isUsableWindow(window: unknown): window is number {
  return typeof window === 'number' && Number.isFinite(window) && window >= MIN_CONTEXT_WINDOW;
}

/**
 * The window a call is measured against, the user's settings first: the `contextWindow` option,
 * else a `models` entry naming the model, else the window the host declares (when usable), else the
 * registry's. Undefined when none is known. Pure: no event. Adapters pass it as the call's window.
 */
export function contextWindowFor(
  options: Pick<ResolvedOptions, 'contextWindow' | 'models'>,
  query: { modelId?: string | undefined; contextWindow?: number | undefined },
): number | undefined {
  if (options.contextWindow !== undefined) return options.contextWindow;
  const { modelId } = query;
  if (modelId && matchingOverride(modelId, options.models) !== undefined)
    return resolveModelInfo(modelId, options.models)?.contextWindow;
  if (isUsableWindow(query.contextWindow)) return query.contextWindow;
  return modelId ? resolveModelInfo(modelId)?.contextWindow : undefined;
}

/** What a model id resolves to, the same on every call (the options are fixed): looked up once. */
interface ModelFacts {
  window: number | undefined;
  encoding: ReturnType<typeof encodingFor>;
  provider: ReturnType<typeof mediaProviderForModel>;
}

/** Model ids whose facts are kept (a guard serves a handful; a host inventing ids cannot grow it). */
const MODEL_FACTS = 64;
/** The facts' key of calls without a model id (a cache key cannot be undefined; '' is an id too). */
const NO_MODEL = Symbol('no model id');

/** Resolves windows, thresholds and text measures, reporting each configuration problem once. */
export class CallResolver {
  private readonly facts = new BoundedMap<string | typeof NO_MODEL, ModelFacts>(MODEL_FACTS);
  private readonly reportedModels = new BoundedMap<string, true>(MODEL_FACTS);
  /** Windows providers named in their rejections, by model id ('' for calls without one), the oldest forgotten first. */
  private readonly learned = new BoundedMap<string, number>(DEFAULTS.maxLearnedWindows);
  private tokenizerReported = false;
  private readonly options: ResolvedOptions;
  private readonly emit: (event: ContextGuardEvent) => void;

  constructor(options: ResolvedOptions, emit: (event: ContextGuardEvent) => void) {
    this.options = options;
    this.emit = emit;
  }

  /** The registry's answers for a model id (and the options'), from the cache after the first call. */
  private factsOf(modelId: string | undefined): ModelFacts {
    let facts = this.facts.peek(modelId ?? NO_MODEL);
    if (!facts) {
      facts = {
        window: modelId ? resolveModelInfo(modelId, this.options.models)?.contextWindow : undefined,
        encoding: encodingFor(this.options.exactCounting, modelId, this.options.models),
        provider: mediaProviderForModel(modelId),
      };
      this.facts.set(modelId ?? NO_MODEL, facts);
    }
    return facts;
  }

  /**
   * The window of a call: the option, else the host's, else the registry's, else the fallback
   * (reported once per model); never above a limit the provider named for the model (learned).
   */
  window(sessionId: string, modelId: string | undefined, callWindow: number | undefined): number {
    const window = this.configuredWindow(sessionId, modelId, callWindow);
    const learned = this.learned.peek(modelId ?? '');
    return learned !== undefined && learned < window ? learned : window;
  }

  private configuredWindow(sessionId: string, modelId: string | undefined, callWindow: number | undefined): number {
    if (this.options.contextWindow !== undefined) return this.options.contextWindow;
    // A host's window below the minimum (a profile's placeholder, a fraction) is no window at all.
    if (isUsableWindow(callWindow)) return callWindow;
    const window = this.factsOf(modelId).window;
    if (window !== undefined) return window;
    const fallback = this.options.fallbackContextWindow;
    const key = modelId ?? '';
    if (!this.reportedModels.has(key)) {
      // Bounded like the facts: a host inventing ids gets reported again, never grows the set.
      this.reportedModels.set(key, true);
      const message = modelId
        ? `no context window is known for model "${modelId}": guarding it with the fallback window of ${fallback} tokens (\`fallbackContextWindow\`); set \`contextWindow\` or \`models: { "${modelId}": <tokens> }\` to use its real window`
        : `no \`contextWindow\` is set and the call has no model id: guarding it with the fallback window of ${fallback} tokens (\`fallbackContextWindow\`)`;
      this.emit({
        type: 'window-fallback',
        sessionId,
        ...(modelId ? { modelId } : {}),
        contextWindow: fallback,
        message,
      });
      // Never silently: without an `onEvent` to hear it, the console does.
      if (!this.options.onEvent) console.warn(`context-guard: ${message}`);
    }
    return fallback;
  }

  /**
   * Learns the window a provider named in a rejection for this model (the smallest such limit is
   * kept; the oldest model is forgotten past the bound). Answers whether the limit lowers the call's
   * window; when it does, a `window-learned` event says so, with the window before.
   */
  learn(sessionId: string, modelId: string | undefined, limit: number, callWindow: number | undefined): boolean {
    if (!Number.isSafeInteger(limit) || limit < MIN_CONTEXT_WINDOW) return false;
    const previous = this.window(sessionId, modelId, callWindow);
    if (limit >= previous) return false;
    const key = modelId ?? '';
    this.learned.set(key, limit);
    this.emit({ type: 'window-learned', sessionId, ...(modelId ? { modelId } : {}), contextWindow: limit, previous });
    return true;
  }

  threshold(sessionId: string, window: number): number {
    const threshold = thresholdFor(window, this.options.buffer);
    if (threshold > 0) return threshold;
    // A fixed buffer larger than a (registry-resolved) window: keep the default fraction instead.
    this.emit({
      type: 'config-warning',
      sessionId,
      field: 'buffer',
      message: `buffer leaves no room in a ${window}-token window; using 20% of the window`,
    });
    return thresholdFor(window, undefined);
  }

  /** How a call's text is measured; characters when the tokenizer cannot load (reported once). */
  async textMeasure(sessionId: string, modelId: string | undefined): Promise<TextMeasure> {
    const encoding = this.factsOf(modelId).encoding;
    try {
      return await textMeasure(encoding);
    } catch (error) {
      if (!this.tokenizerReported) {
        this.tokenizerReported = true;
        this.emit({
          type: 'config-warning',
          sessionId,
          field: 'exactCounting',
          message: `gpt-tokenizer (${encoding}) could not be loaded, counting characters instead: ${String(error)}`,
        });
      }
      return CHARACTER_MEASURE;
    }
  }

  /** Everything a beforeModel call measures with; at once (no promise) when no tokenizer is needed. */
  call(measurer: PromptMeasurer, input: CallInput, canonical?: CanonicalMessages): Call | Promise<Call> {
    const { sessionId, modelId } = input;
    const { encoding, provider } = this.factsOf(modelId);
    const limits = this.limits(input);
    if (encoding === undefined)
      return new MeasuredCall(measurer, input, limits, provider, CHARACTER_MEASURE, canonical);
    return this.textMeasure(sessionId, modelId).then(
      (text) => new MeasuredCall(measurer, input, limits, provider, text, canonical),
    );
  }

  private limits(input: CallInput): { contextWindow: number; threshold: number } {
    const contextWindow = this.window(input.sessionId, input.modelId, input.contextWindow);
    return { contextWindow, threshold: this.threshold(input.sessionId, contextWindow) };
  }
}

/** What a call is set up from. */
export interface CallInput {
  sessionId: string;
  modelId?: string | undefined;
  messages: readonly GuardMessage[];
  tools?: readonly ToolDefinition[] | undefined;
  contextWindow?: number | undefined;
}

/**
 * A call, built on every beforeModel: one object whose measures are methods, not a literal of
 * closures (six closures and their context were most of what setting a call up allocated). The
 * two functions handed around detached (`hashOf`, `measure`) are bound on first use.
 */
class MeasuredCall implements Call {
  readonly sessionId: string;
  readonly hostMessages: readonly GuardMessage[];
  readonly canonicalInput: readonly GuardMessage[] | undefined;
  readonly tools: readonly ToolDefinition[] | undefined;
  readonly contextWindow: number;
  readonly threshold: number;
  private readonly measurer: PromptMeasurer;
  private readonly provider: ReturnType<typeof mediaProviderForModel>;
  private readonly text: TextMeasure;
  readonly canonical: CanonicalMessages | undefined;
  private host: MeasuredPrompt | undefined;
  private system: SizeOf | undefined;
  private boundHashOf: ((index: number) => number) | undefined;
  private boundMeasure: ((messages: GuardMessage[]) => MeasuredPrompt) | undefined;

  /** `canonical`: the form the history check handed over for `input.messages`, if it kept one. */
  constructor(
    measurer: PromptMeasurer,
    input: CallInput,
    limits: { contextWindow: number; threshold: number },
    provider: ReturnType<typeof mediaProviderForModel>,
    text: TextMeasure,
    canonical: CanonicalMessages | undefined,
  ) {
    const hostMessages = input.messages;
    this.sessionId = input.sessionId;
    this.hostMessages = hostMessages;
    this.tools = input.tools;
    this.contextWindow = limits.contextWindow;
    this.threshold = limits.threshold;
    this.measurer = measurer;
    this.provider = provider;
    this.text = text;
    // The length guards against a host that changed the array in place since the check.
    if (canonical?.length !== hostMessages.length) canonical = undefined;
    this.canonical = canonical;
    const rebuilt = canonical?.rebuilt ? canonical.messages : undefined;
    this.canonicalInput = rebuilt
      ? rebuilt.length === hostMessages.length
        ? rebuilt
        : rebuilt.slice(0, hostMessages.length)
      : undefined;
    this.host = undefined;
    this.system = undefined;
    this.boundHashOf = undefined;
    this.boundMeasure = undefined;
  }

  /** The host's messages under `key`, from their canonical form when there is one. */
  private measureAs(key: string, withTools: readonly ToolDefinition[] | undefined): MeasuredPrompt {
    const canonical = this.canonical;
    return canonical
      ? this.measurer.measureCanonical(key, canonical, withTools, this.provider, this.text)
      : this.measurer.measure(key, this.hostMessages, withTools, this.provider, this.text);
  }

  /** Under the session's own key (the other two are built when used: most calls measure neither). */
  get measure(): (messages: GuardMessage[]) => MeasuredPrompt {
    this.boundMeasure ??= (messages) =>
      this.measurer.measure(promptKey(this.sessionId), messages, this.tools, this.provider, this.text);
    return this.boundMeasure;
  }

  measureHostPrompt(): MeasuredPrompt {
    return this.measureAs(promptKey(this.sessionId), this.tools);
  }

  measureHost(): MeasuredPrompt {
    this.host ??= this.measureAs(measurerKeys(this.sessionId)[1], undefined);
    return this.host;
  }

  get hashOf(): (index: number) => number {
    this.boundHashOf ??= (i) => this.measureHost().entries[i]?.hash ?? 0;
    return this.boundHashOf;
  }

  measureApart(messages: GuardMessage[]): MeasuredPrompt {
    return this.measurer.measure(measurerKeys(this.sessionId)[2], messages, this.tools, this.provider, this.text);
  }

  measureSystem(): SizeOf {
    if (!this.system) {
      const { chars, mediaTokens } = this.measureApart(this.hostMessages.filter((m) => m.role === 'system'));
      this.system = { chars, mediaTokens };
    }
    return this.system;
  }
}

/**
 * The measurer's keys of a session: its prompt, its host messages measured on their own, and
 * prompts measured apart (the ones `Call` measures with).
 */
// The kind first, between NULs, for the two kinds measured apart; the prompt under the session id
// itself (no string built on every call) unless the id starts with a NUL: no session's key is
// another session's, or another kind's.
const promptKey = (sessionId: string): string =>
  sessionId.charCodeAt(0) === 0 ? `\u0000prompt\u0000${sessionId}` : sessionId;
export const measurerKeys = (sessionId: string): [prompt: string, host: string, apart: string] => [
  promptKey(sessionId),
  `\u0000input\u0000${sessionId}`,
  `\u0000apart\u0000${sessionId}`,
];
