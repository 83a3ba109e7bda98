// withContextGuard: a chat model whose every call is guarded. It is a Runnable with the chat model's
// calling interface (invoke, stream, batch, bindTools, withConfig...): each call's messages are
// converted to the guard's (convert.ts), estimated and compacted by beforeModel, converted back
// (untouched messages are the caller's own objects) and sent to the wrapped model; the response's
// usage_metadata is then recorded by afterModel. A context-length rejection (before any content, when
// streaming) is recovered once: the call is compacted and sent again. No run of its own is created:
// the wrapped model's run, in the caller's trace, shows exactly the compacted messages the provider received.
import { LRUCache } from 'lru-cache';
import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import type { BaseChatModelCallOptions, BindToolsInput } from '@langchain/core/language_models/chat_models';
import {
  coerceMessageLikeToMessage,
  HumanMessage,
  type AIMessageChunk,
  type BaseMessage,
  type BaseMessageLike,
} from '@langchain/core/messages';
import {
  ensureConfig,
  pickRunnableConfigKeys,
  Runnable,
  RunnableBinding,
  type RunnableConfig,
} from '@langchain/core/runnables';
import type { ContextGuard, ContextGuardOptions, GuardMessage, ModelUsage, ToolDefinition } from '../../src/index.ts';
import { ownedGuardWindow, reportAdapterError } from '../shared/model-window.ts';
import { retryAfterOverflow } from '../shared/overflow-retry.ts';
import { adapterGuard } from '../shared/owned-guard.ts';
import { deriveSessionId, resolveSessionId } from '../shared/session-id.ts';
import { addUsage, usageFromMessage } from '../shared/usage.ts';
import { fromGuardMessages, toGuardMessages, toGuardTools } from './convert.ts';
import { callWindow, modelIdOf, profileWindow, threadIdOf } from './model-info.ts';
import { langchainSummarizer, type InvokableChatModel } from './summarizer.ts';
import { atMostEntries } from '../shared/bounded.ts';

/** Which conversation a call belongs to; see {@link WithContextGuardOptions.sessionId}. */
export type SessionIdOption = string | ((config: RunnableConfig) => string | undefined);

interface AdapterOptions {
  /**
   * The session of every call: a fixed id, or a function of the call's config. Default (or when
   * the function returns nothing, or throws: that is reported to onEvent): `config.configurable.thread_id`
   * (a string or a number), else an id derived from the conversation's start (its system messages
   * and first user message), so two conversations through one model never share calibration or summaries.
   */
  sessionId?: SessionIdOption;
}

/**
 * Core options (a new guard: the window defaults to the model's `profile.maxInputTokens`, then to
 * the registry by the model's name; the summarizer to the model itself), or an existing guard.
 */
export type WithContextGuardOptions = (ContextGuardOptions | { guard: ContextGuard }) & AdapterOptions;

/** A model with LangChain's bindTools, as BaseChatModel declares it (optional there). */
interface ToolBindable<CallOptions extends RunnableConfig, Output> {
  bindTools?(
    tools: BindToolsInput[],
    kwargs?: Partial<CallOptions>,
  ): Runnable<BaseLanguageModelInput, Output, CallOptions>;
}

type AnyRunnable = Runnable<BaseLanguageModelInput, unknown, RunnableConfig>;

interface GuardedFields {
  guard: ContextGuard;
  /** The chat model itself (unwrapped from bindings): its bindTools, profile and name. */
  model: object;
  /** The binding the caller wrapped (e.g. `model.withConfig(...)`), re-applied around bindTools' result. */
  binding: RunnableBinding<BaseLanguageModelInput, unknown, RunnableConfig> | undefined;
  /** What each call invokes: the model, a binding of it, or its bindTools result. */
  bound: AnyRunnable;
  tools: ToolDefinition[] | undefined;
  modelId: string | undefined;
  sessionId: SessionIdOption | undefined;
  /** Per session, the config of its latest call: the default summarizer runs under it. */
  contexts: LRUCache<string, RunnableConfig> | undefined;
}

const MAX_CONTEXTS = 10_000;

/** One call's guarded input, and its session (none when the input could not be read). */
interface PreparedCall {
  input: BaseLanguageModelInput;
  sessionId?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** A content block that says something: anything but an empty text block. */
function isContentBlock(block: unknown): boolean {
  if (!isObject(block)) return typeof block === 'string' ? block.length > 0 : block !== undefined && block !== null;
  return !(block['type'] === 'text' && block['text'] === '');
}

const nonEmpty = (value: unknown): boolean => Array.isArray(value) && value.length > 0;

/**
 * Whether a streamed chunk carries content (text or other blocks, tool calls, usage), as opposed to
 * the provider's bookkeeping (ids, status, metadata) that may come before it still rejects the prompt.
 * A chunk of an unknown shape counts as content: it is never held back.
 */
function carriesContent(chunk: unknown): boolean {
  if (typeof chunk === 'string') return chunk.length > 0;
  if (!isObject(chunk)) return true;
  const content = chunk['content'];
  const hasContent = Array.isArray(content)
    ? content.some(isContentBlock)
    : typeof content === 'string'
      ? content.length > 0
      : content !== undefined && content !== null;
  return (
    hasContent ||
    nonEmpty(chunk['tool_call_chunks']) ||
    nonEmpty(chunk['tool_calls']) ||
    nonEmpty(chunk['invalid_tool_calls']) ||
    usageFromMessage(chunk) !== undefined
  );
}

/** The BaseMessages of any chat model input (a string, a prompt value, message-likes). */
function toBaseMessages(input: BaseLanguageModelInput): BaseMessage[] {
  if (typeof input === 'string') return [new HumanMessage(input)];
  if (Array.isArray(input)) return input.map((m) => coerceMessageLikeToMessage(m as BaseMessageLike));
  if (isObject(input) && typeof (input as { toChatMessages?: unknown }).toChatMessages === 'function') {
    return (input as { toChatMessages(): BaseMessage[] }).toChatMessages();
  }
  throw new TypeError('context-guard: unsupported chat model input');
}

/**
 * A chat model guarded by context-guard; created by {@link withContextGuard}. Calls go to the
 * wrapped model with the compacted messages; `bindTools` returns another guarded model, whose
 * tool definitions are counted in every estimate.
 */
export class GuardedChatModel<
  CallOptions extends BaseChatModelCallOptions = BaseChatModelCallOptions,
  Output = AIMessageChunk,
> extends Runnable<BaseLanguageModelInput, Output, CallOptions> {
  override lc_namespace = ['context_guard', 'langchain'];

  readonly guard: ContextGuard;
  /** The tool definitions counted with each call (from bindTools). */
  readonly tools: ToolDefinition[] | undefined;
  readonly modelId: string | undefined;
  private readonly fields: GuardedFields;

  static override lc_name(): string {
    return 'GuardedChatModel';
  }

  constructor(fields: GuardedFields) {
    super();
    this.fields = fields;
    this.guard = fields.guard;
    this.tools = fields.tools;
    this.modelId = fields.modelId;
  }

  /** The wrapped model's profile (capabilities and `maxInputTokens`). */
  get profile(): unknown {
    try {
      return (this.fields.model as { profile?: unknown }).profile ?? {};
    } catch {
      return {};
    }
  }

  override getName(suffix?: string): string {
    const inner = (this.fields.model as { getName?: () => string }).getName?.() ?? 'ChatModel';
    return `ContextGuard(${inner})${suffix ?? ''}`;
  }

  // After a context-length rejection the call is guarded again (the guard recorded the provider's
  // count and compacts) and sent once more; a second rejection, or any other error, reaches the caller.
  override async invoke(input: BaseLanguageModelInput, options?: Partial<CallOptions>): Promise<Output> {
    const config = ensureConfig(options) as Partial<CallOptions>;
    let call = await this.prepare(input, config);
    // Aborted while compacting: the call is not sent (not every integration checks the signal before it sends).
    config.signal?.throwIfAborted();
    let response: Output;
    try {
      response = (await this.fields.bound.invoke(call.input, config)) as Output;
    } catch (error) {
      const retry = await this.retryAfter(error, call, input, config);
      if (!retry) throw error;
      call = retry;
      response = (await this.fields.bound.invoke(call.input, config)) as Output;
    }
    if (call.sessionId)
      await this.guard.afterModel({ sessionId: call.sessionId, usage: usageFromMessage(response) ?? null });
    return response;
  }

  // A rejection before any content is retried as invoke's is. Chunks without content (OpenAI's
  // Responses API opens with response.created before it may still reject the prompt) are held
  // back until the first content chunk, so a retried attempt leaves nothing behind in the caller's
  // output; once content has reached the caller, errors pass as they come.
  override async *_streamIterator(
    input: BaseLanguageModelInput,
    options?: Partial<CallOptions>,
  ): AsyncGenerator<Output> {
    const config = ensureConfig(options) as Partial<CallOptions>;
    let call = await this.prepare(input, config);
    let retried = false;
    for (;;) {
      // Usage arrives in parts (Anthropic: input with the first chunk, output with the last): summed,
      // as LangChain's own chunk concatenation does. A stream abandoned early records nothing.
      let usage: ModelUsage | undefined;
      let heldBack: Output[] | undefined = [];
      try {
        for await (const chunk of await this.fields.bound.stream(call.input, config)) {
          usage = addUsage(usage, usageFromMessage(chunk));
          if (heldBack && !carriesContent(chunk)) {
            heldBack.push(chunk as Output);
            continue;
          }
          // Content from here on: nothing of this attempt may be retried, even if the caller throws into a yield.
          const held = heldBack ?? [];
          heldBack = undefined;
          yield* held;
          yield chunk as Output;
        }
      } catch (error) {
        const retry = !heldBack || retried ? undefined : await this.retryAfter(error, call, input, config);
        if (!retry) throw error;
        call = retry;
        retried = true;
        continue;
      }
      if (heldBack) yield* heldBack;
      if (call.sessionId) await this.guard.afterModel({ sessionId: call.sessionId, usage: usage ?? null });
      return;
    }
  }

  /**
   * After a failed call: the call guarded again when the guard recognizes a context-length rejection; otherwise
   * undefined.
   */
  private retryAfter(error: unknown, call: PreparedCall, input: BaseLanguageModelInput, config: Partial<CallOptions>) {
    return retryAfterOverflow(this.guard, call.sessionId, error, () => this.prepare(input, config));
  }

  /**
   * Binds tools to the wrapped model (its own bindTools, so provider formats stay its business)
   * and returns a guarded model that counts them. Throws, as the model would, when it cannot bind tools.
   */
  bindTools(tools: BindToolsInput[], kwargs?: Partial<CallOptions>): GuardedChatModel<CallOptions, Output> {
    const model = this.fields.model as ToolBindable<CallOptions, Output>;
    if (typeof model.bindTools !== 'function')
      throw new Error(`context-guard: ${this.getName()} does not support bindTools`);
    let bound: AnyRunnable = model.bindTools(tools, kwargs) as unknown as AnyRunnable;
    const binding = this.fields.binding;
    if (binding) {
      // Keep the settings of the binding the caller wrapped (as createAgent does for bound models),
      // but not tools bound there: they would override the new ones.
      const { tools: _config, ...config } = (binding.config ?? {}) as Record<string, unknown>;
      const { tools: _kwargs, ...kwargs } = (binding.kwargs ?? {}) as Record<string, unknown>;
      bound = new RunnableBinding({ bound, config, kwargs, configFactories: binding.configFactories });
    }
    return new GuardedChatModel<CallOptions, Output>({ ...this.fields, bound, tools: toGuardTools(tools) });
  }

  /**
   * The default summarizer's call runs in this call's context (its trace, its handlers; tagged
   * `nostream`, it stays out of streamed output, see summarizer.ts), but without the call's model
   * options (`tools` or `tool_choice` would make it call a tool) and its signal (the guard's
   * timeout governs the summary).
   */
  private rememberContext(sessionId: string, config: Partial<CallOptions>): void {
    const contexts = this.fields.contexts;
    if (!contexts) return;
    const { signal: _signal, timeout: _timeout, ...context } = pickRunnableConfigKeys(config as RunnableConfig) ?? {};
    contexts.set(sessionId, context);
  }

  private sessionOf(config: RunnableConfig, messages: readonly GuardMessage[]): string {
    return (
      resolveSessionId({
        option: this.fields.sessionId,
        context: config,
        hostId: threadIdOf(config),
        onError: (error) => reportAdapterError(this.guard, { stage: 'beforeModel', error }),
      }) ?? deriveSessionId(messages)
    );
  }

  /** The guarded input of one call, and its session; the input as it was when it cannot be read. */
  private async prepare(input: BaseLanguageModelInput, config: Partial<CallOptions>): Promise<PreparedCall> {
    let messages: BaseMessage[];
    try {
      messages = toBaseMessages(input);
    } catch {
      return { input }; // the model reports its own error for an input it cannot take either
    }
    let sessionId: string | undefined;
    try {
      const guardMessages = toGuardMessages(messages);
      sessionId = this.sessionOf(config, guardMessages);
      // Tools passed per call (`invoke(messages, { tools })`) are what the provider receives.
      const callTools = (config as { tools?: unknown }).tools;
      const tools = Array.isArray(callTools) ? toGuardTools(callTools) : this.tools;
      this.rememberContext(sessionId, config);
      // A shared guard ({ guard }) without a window of its own still learns the model's from its
      // profile, unless one of its `models` entries names the model.
      const window = callWindow(this.guard, this.fields.model, this.modelId);
      const result = await this.guard.beforeModel({
        sessionId,
        messages: guardMessages,
        ...(this.modelId ? { modelId: this.modelId } : {}),
        ...(tools ? { tools } : {}),
        ...(window !== undefined ? { contextWindow: window } : {}),
        // An aborted call stops its compaction's summary (the mechanical digest takes its place).
        ...(config.signal ? { signal: config.signal } : {}),
      });
      return { input: fromGuardMessages(result.messages), sessionId };
    } catch (error) {
      // A conversion bug must not fail the call: it goes out unguarded, and the guard's onEvent hears of it.
      reportAdapterError(this.guard, { sessionId, stage: 'beforeModel', error });
      return { input: messages, ...(sessionId ? { sessionId } : {}) };
    }
  }
}

/** The model inside bindings (`model.withConfig(...)`), and the outermost binding. */
function unwrap(model: object): {
  base: object;
  binding: RunnableBinding<BaseLanguageModelInput, unknown, RunnableConfig> | undefined;
  tools: unknown;
} {
  let base: object = model;
  let tools: unknown;
  const binding = RunnableBinding.isRunnableBinding(model)
    ? (model as RunnableBinding<BaseLanguageModelInput, unknown, RunnableConfig>)
    : undefined;
  while (RunnableBinding.isRunnableBinding(base)) {
    const b = base as RunnableBinding<BaseLanguageModelInput, unknown, RunnableConfig> & {
      kwargs?: Record<string, unknown>;
    };
    // Tools bound before wrapping: in the kwargs, or the config (chat models' bindTools use withConfig).
    tools ??= b.kwargs?.['tools'] ?? (b.config as Record<string, unknown> | undefined)?.['tools'];
    base = b.bound;
  }
  return { base, binding, tools };
}

/**
 * Wraps a LangChain chat model so that every call stays under its context window:
 *
 * ```ts
 * const model = withContextGuard(new ChatOpenAI({ model: 'gpt-4o' }), { contextWindow: 128_000 });
 * const reply = await model.bindTools(tools).invoke(messages, { configurable: { thread_id: 'chat-42' } });
 * ```
 *
 * The window comes from `contextWindow`, else the model's `profile.maxInputTokens`, else the
 * built-in registry by the model's name (`model` / `modelName`); never LangChain's 4,097-token
 * fallback. With `{ guard }`, the guard's own window settings apply. The summarizer defaults to
 * the wrapped model itself (see `langchainSummarizer`). The result carries its `guard`.
 */
export function withContextGuard<
  CallOptions extends BaseChatModelCallOptions = BaseChatModelCallOptions,
  Output = AIMessageChunk,
>(
  chatModel: Runnable<BaseLanguageModelInput, Output, CallOptions>,
  options: WithContextGuardOptions = {},
): GuardedChatModel<CallOptions, Output> {
  const { base, binding, tools } = unwrap(chatModel);
  const modelId = modelIdOf(base);
  let contexts: LRUCache<string, RunnableConfig> | undefined;
  const { guard } = adapterGuard<AdapterOptions>(options, ['sessionId'], {
    contextWindow: (core) => ownedGuardWindow(core, { modelId, contextWindow: profileWindow(base) }),
    summarizer: () => {
      const known = (contexts = new LRUCache(atMostEntries(MAX_CONTEXTS)));
      return langchainSummarizer(base as InvokableChatModel, { config: ({ sessionId }) => known.peek(sessionId) });
    },
  });
  return new GuardedChatModel<CallOptions, Output>({
    guard,
    model: base,
    binding,
    bound: chatModel as unknown as AnyRunnable,
    tools: Array.isArray(tools) ? toGuardTools(tools) : undefined,
    modelId,
    sessionId: options.sessionId,
    contexts,
  });
}
