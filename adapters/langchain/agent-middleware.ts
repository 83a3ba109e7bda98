// contextGuardMiddleware for LangChain v1's createAgent. Two hooks:
// - beforeModel compacts the agent's state itself (RemoveMessage of everything, then the summary
//   and the kept messages), so LangGraph checkpoints hold the compacted history and later turns
//   build on the summary instead of summarizing the same messages again;
// - wrapModelCall fits the single request (system message and bound tools counted) when it is
//   still over, on a copy: the state is not touched there; when the provider still rejects it for
//   its length, it is compacted and sent once more; the provider's real count (the response's
//   usage_metadata) is recorded there, once per model call.
// Both hooks pass the run's abort signal to the guard: an aborted run does not wait for a summary.
// Both write the session's context (meter and compactions, the parts writeContextParts writes for AI
// SDK UI) to the run's stream writer: `agent.stream(input, { streamMode: 'custom' })` yields them.
import { LRUCache } from 'lru-cache';
import { RemoveMessage, type SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { createMiddleware, type ModelRequest, type WrapModelCallHandler } from 'langchain';
import {
  thresholdFor,
  type ContextGuard,
  type ContextGuardOptions,
  type ErrorEvent,
  type ModelUsage,
  type ToolDefinition,
} from '../../src/index.ts';
import { watchContext, type ContextGuardPart, type ContextWatch, type MeterScale } from '../shared/context-parts.ts';
import { reportAdapterError } from '../shared/model-window.ts';
import { retryAfterOverflow } from '../shared/overflow-retry.ts';
import { adapterGuard, latestModelSummarizer } from '../shared/owned-guard.ts';
import { deriveSessionId, hostSessionId, resolveSessionId } from '../shared/session-id.ts';
import { usageFromMessage } from '../shared/usage.ts';
import { fromGuardMessages, toGuardMessages, toGuardTools } from './convert.ts';
import { callWindow, modelIdOf, threadIdOf } from './model-info.ts';
import { langchainSummarizer, type InvokableChatModel } from './summarizer.ts';
import { atMostEntries } from '../shared/bounded.ts';

/**
 * LangGraph's "remove all messages" id (`REMOVE_ALL_MESSAGES` in @langchain/langgraph), written
 * out so that this adapter depends only on langchain and @langchain/core.
 */
const REMOVE_ALL_MESSAGES = '__remove_all__';

export interface AgentMiddlewareOptions {
  /**
   * The session of a run: a fixed id, or a function of the run's `thread_id` (a numeric thread id
   * as its string). Default (or when the function returns nothing, or throws: that is reported to
   * onEvent): the `thread_id`, else derived from the conversation's first messages.
   */
  sessionId?: string | ((config: { thread_id?: string }) => string | undefined);
}

/** Core options (a new guard, whose summarizer defaults to the agent's model), or an existing guard. */
export type ContextGuardAgentMiddlewareOptions = (ContextGuardOptions | { guard: ContextGuard }) &
  AgentMiddlewareOptions;

/** What the last model call of a session showed of the request beyond its messages. */
interface RequestShape {
  system: SystemMessage | undefined;
  tools: ToolDefinition[] | undefined;
  model: object;
  modelId: string | undefined;
  window: number | undefined;
}

/** One middleware's guard and what it remembers between its hooks. */
interface AgentGuard {
  guard: ContextGuard;
  sessionId: AgentMiddlewareOptions['sessionId'];
  /** Per session, the shape of its latest model call. */
  shapes: LRUCache<string, RequestShape>;
  /** Per session, what the beforeModel hook checked last, until the model call it precedes. */
  checked: LRUCache<string, { messages: readonly BaseMessage[]; shape: RequestShape | undefined }>;
  /**
   * Derived ids of states this middleware rewrote, mapped to the session they belong to: without a
   * thread_id the id comes from the conversation's start, which a compaction may summarize.
   */
  aliases: LRUCache<string, string>;
}

type AgentState = { messages: BaseMessage[] };

const MAX_SESSIONS = 10_000;

function hasText(message: SystemMessage | undefined): message is SystemMessage {
  if (!message) return false;
  const content = message.content as unknown;
  return typeof content === 'string' ? content.length > 0 : Array.isArray(content) && content.length > 0;
}

function sameList(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function sessionOf(
  agent: AgentGuard,
  runtime: unknown,
  messages: readonly BaseMessage[],
  stage: ErrorEvent['stage'],
): string {
  const threadId = hostSessionId(threadIdOf(runtime));
  return (
    resolveSessionId({
      option: agent.sessionId,
      context: threadId ? { thread_id: threadId } : {},
      hostId: threadId,
      onError: (error) => reportAdapterError(agent.guard, { stage, error }),
    }) ?? derivedSession(agent, messages)
  );
}

/** The session a conversation's start names, or the one whose state this middleware rewrote into it. */
function derivedSession(agent: AgentGuard, messages: readonly BaseMessage[]): string {
  const derived = deriveSessionId(toGuardMessages(messages.slice(0, 8)));
  return agent.aliases.peek(derived) ?? derived;
}

/**
 * Runs the guard over a request (the system message first, then the messages) and returns the
 * messages to use instead, or undefined when the guard left them as they are.
 */
async function guardMessages(
  agent: AgentGuard,
  sessionId: string,
  shape: RequestShape | undefined,
  messages: BaseMessage[],
  signal: AbortSignal | undefined,
): Promise<BaseMessage[] | undefined> {
  const system = hasText(shape?.system) ? shape.system : undefined;
  const all: BaseMessage[] = system ? [system, ...messages] : messages;
  const r = await agent.guard.beforeModel({
    sessionId,
    messages: toGuardMessages(all),
    ...(shape?.modelId ? { modelId: shape.modelId } : {}),
    ...(shape?.tools ? { tools: shape.tools } : {}),
    ...(shape?.window !== undefined ? { contextWindow: shape.window } : {}),
    ...(signal ? { signal } : {}),
  });
  const out = fromGuardMessages(r.messages);
  if (sameList(out, all)) return undefined;
  // The system message is never changed by the guard: it stays in its own slot of the request.
  return system && out[0] === system ? out.slice(1) : out;
}

/** The beforeModel hook: compacts the agent's state itself, so that checkpoints hold the compacted history. */
async function compactState(agent: AgentGuard, state: AgentState, runtime: unknown) {
  const messages = state.messages;
  if (!Array.isArray(messages) || messages.length === 0) return undefined;
  const sessionId = sessionOf(agent, runtime, messages, 'beforeModel');
  const shape = agent.shapes.peek(sessionId);
  // Before this process has seen the agent's model in this session (a restored thread), the
  // window may only be known from the model's profile: wrapModelCall fits that first request,
  // and this hook compacts the state from the next call on.
  if (!shape && agent.guard.contextWindowFor({}) === undefined) return undefined;
  const watch = watchStream(agent, sessionId, runtime);
  let compacted: BaseMessage[] | undefined;
  try {
    compacted = await guardMessages(agent, sessionId, shape, messages, signalOf(runtime));
  } finally {
    watch?.stop();
  }
  // What the model call will receive, so that wrapModelCall need not run the guard again
  // (once per model call: one estimate event, one pending request).
  agent.checked.set(sessionId, { messages: compacted ?? messages, shape });
  // A compaction (or a tool-pairing repair) rewrites the state, so that the checkpoint holds
  // what the model sees and the next turn builds on the summary.
  if (!compacted) return undefined;
  // The rewritten state starts differently: a session derived from its start stays this one.
  const rewritten = deriveSessionId(toGuardMessages(compacted.slice(0, 8)));
  if (sessionId.startsWith('auto:') && rewritten !== sessionId) agent.aliases.set(rewritten, sessionId);
  return { messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), ...compacted] };
}

/**
 * The wrapModelCall hook: fits the request (system message and tools counted) unless the
 * beforeModel hook just checked it as it is; on a copy, the state is not touched here.
 */
async function fitRequest(agent: AgentGuard, request: ModelRequest, handler: WrapModelCallHandler) {
  const model = request.model as object;
  const modelId = modelIdOf(model);
  const shape: RequestShape = {
    system: request.systemMessage,
    tools: toGuardTools(request.tools as unknown[]),
    model,
    modelId,
    // A user's `models` entry for this model wins over the profile, as in withContextGuard.
    window: callWindow(agent.guard, model, modelId),
  };
  const sessionId = sessionOf(agent, request.runtime, request.messages, 'beforeModel');
  agent.shapes.set(sessionId, shape);
  const seen = agent.checked.peek(sessionId);
  agent.checked.delete(sessionId);
  // The request beforeModel just checked, unchanged (same messages, system message and tools): already estimated and
  // fitted.
  const checkedAlready =
    seen?.shape &&
    sameList(seen.messages, request.messages) &&
    seen.shape.system === shape.system &&
    seen.shape.tools === shape.tools;
  const signal = signalOf(request.runtime);
  const watch = watchStream(agent, sessionId, request.runtime, scaleOf(agent.guard, shape));
  try {
    return await callModel(agent, sessionId, shape, request, handler, !checkedAlready, signal);
  } finally {
    // The meter as the session's status has it after the call, when the count heard here could not
    // be drawn (no window known for this request: then the status has the one the guard used).
    await watch?.finish({ onlyMissed: true });
  }
}

/** The model call of wrapModelCall: the request fitted (unless `fit` is off), sent, retried once after a context-length rejection. */
async function callModel(
  agent: AgentGuard,
  sessionId: string,
  shape: RequestShape,
  request: ModelRequest,
  handler: WrapModelCallHandler,
  fit: boolean,
  signal: AbortSignal | undefined,
) {
  const messages = fit ? await guardMessages(agent, sessionId, shape, request.messages, signal) : undefined;
  let response: Awaited<ReturnType<WrapModelCallHandler>>;
  try {
    response = await handler(messages ? { ...request, messages } : request);
  } catch (error) {
    // A context-length rejection: the guard recorded the provider's count and requested a
    // compaction; the request is fitted again (on a copy, as always here: the next beforeModel
    // hook finds the stored summary and writes it into the state) and sent once more. Any other
    // error, a failure on the way, or a second rejection reaches the agent as the model threw it.
    const fitAgain = async () => ({
      messages: await guardMessages(agent, sessionId, shape, request.messages, signal),
    });
    const again = await retryAfterOverflow(agent.guard, sessionId, error, fitAgain);
    if (!again) throw error;
    response = await handler(again.messages ? { ...request, messages: again.messages } : request);
  }
  await recordUsage(agent, sessionId, response);
  return response;
}

/**
 * Records the provider's real count from what the model call produced. Here rather than in an
 * afterModel hook: with a structured response (toolStrategy) the state ends in LangChain's own
 * synthetic AIMessage, without usage, while the handler returns the model's answer (or, for a
 * structured response, `{ structuredResponse, messages }` with the model's answer first).
 */
async function recordUsage(agent: AgentGuard, sessionId: string, response: unknown): Promise<void> {
  const usage = usageOfResponse(response);
  if (usage) await agent.guard.afterModel({ sessionId, usage });
}

/**
 * The usage of the model's answer: the response's own, or the first of a structured response's
 * messages that carries one (the answer; LangChain's ToolMessage and synthetic AIMessage have none).
 * What another middleware returned is read defensively: a getter that throws means no usage.
 */
function usageOfResponse(response: unknown): ModelUsage | undefined {
  const own = usageFromMessage(response);
  if (own || typeof response !== 'object' || response === null) return own;
  try {
    const messages = (response as { messages?: unknown }).messages;
    return Array.isArray(messages) ? messages.map(usageFromMessage).find((usage) => usage !== undefined) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Writes the session's context parts to the run's stream writer (`runtime.writer`: LangGraph's
 * custom stream mode, a no-op unless the run streams `custom`) while a hook runs.
 */
function watchStream(
  agent: AgentGuard,
  sessionId: string,
  runtime: unknown,
  scale?: MeterScale,
): ContextWatch | undefined {
  let writer: unknown;
  try {
    writer = (runtime as { writer?: unknown } | undefined)?.writer;
  } catch {
    return undefined;
  }
  if (typeof writer !== 'function') return undefined;
  const write = writer as (chunk: ContextGuardPart) => void;
  return watchContext(agent.guard, sessionId, (part) => write(part), { scale });
}

/** The window and threshold the guard measures a request of this shape against (as its call does). */
function scaleOf(guard: ContextGuard, shape: RequestShape): MeterScale | undefined {
  const contextWindow = guard.contextWindowFor({ modelId: shape.modelId, contextWindow: shape.window });
  if (contextWindow === undefined) return undefined;
  const threshold = thresholdFor(contextWindow, guard.options.buffer);
  return { contextWindow, threshold: threshold > 0 ? threshold : thresholdFor(contextWindow, undefined) };
}

/** The run's abort signal, as LangChain gives it to middleware hooks (`runtime.signal`). */
function signalOf(runtime: unknown): AbortSignal | undefined {
  try {
    const signal = (runtime as { signal?: unknown } | undefined)?.signal;
    return signal instanceof AbortSignal ? signal : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The guard as a createAgent middleware:
 *
 * ```ts
 * const agent = createAgent({ model, tools, middleware: [contextGuardMiddleware({ contextWindow: 128_000 })] });
 * await agent.invoke({ messages }, { configurable: { thread_id: 'chat-42' } });
 * ```
 *
 * The window comes from `contextWindow`, else the model's `profile.maxInputTokens`, else the
 * registry by the model's name. The summarizer defaults to the agent's own model.
 */
export function contextGuardMiddleware(options: ContextGuardAgentMiddlewareOptions = {}) {
  const shapes = new LRUCache<string, RequestShape>(atMostEntries(MAX_SESSIONS));
  // The agent's model, seen at its latest call in this session (the first compaction of a
  // restored thread, before any call, falls back to the mechanical digest).
  const { guard } = adapterGuard<AgentMiddlewareOptions>(options, ['sessionId'], {
    summarizer: () =>
      latestModelSummarizer(
        (sessionId) => shapes.peek(sessionId)?.model,
        (model) => langchainSummarizer(model as InvokableChatModel),
        'the agent has not called its model yet in this session',
      ),
  });
  const agent: AgentGuard = {
    guard,
    sessionId: options.sessionId,
    shapes,
    checked: new LRUCache(atMostEntries(MAX_SESSIONS)),
    aliases: new LRUCache(atMostEntries(MAX_SESSIONS)),
  };
  return Object.assign(
    createMiddleware({
      name: 'ContextGuardMiddleware',
      beforeModel: (state, runtime) => compactState(agent, state as AgentState, runtime),
      wrapModelCall: (request, handler) => fitRequest(agent, request, handler),
    }),
    { guard },
  );
}
