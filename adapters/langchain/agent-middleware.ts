// contextGuardMiddleware for LangChain v1's createAgent. Three hooks:
// - beforeModel compacts the agent's state itself (RemoveMessage of everything, then the summary
//   and the kept messages), so LangGraph checkpoints hold the compacted history and later turns
//   build on the summary instead of summarizing the same messages again;
// - wrapModelCall fits the single request (system message and bound tools counted) when it is
//   still over, on a copy: the state is not touched there; when the provider still rejects it for
//   its length, it is compacted and sent once more;
// - afterModel records the provider's real count from the new AIMessage's usage_metadata.
import { RemoveMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { createMiddleware } from 'langchain';
import { createContextGuard, type ContextGuard, type ContextGuardOptions, type Summarizer, type ToolDefinition } from '../../src/index.ts';
import { deriveSessionId } from '../shared/session-id.ts';
import { fromGuardMessages, toGuardMessages, toGuardTools } from './convert.ts';
import { langchainSummarizer, type InvokableChatModel } from './summarizer.ts';
import { modelIdOf, profileWindow, userModelsCover } from './with-context-guard.ts';

/**
 * LangGraph's "remove all messages" id (`REMOVE_ALL_MESSAGES` in @langchain/langgraph), written
 * out so that this adapter depends only on langchain and @langchain/core.
 */
const REMOVE_ALL_MESSAGES = '__remove_all__';

export interface AgentMiddlewareOptions {
  /** The session of a run without a `thread_id`. Default: derived from the conversation's first user message. */
  sessionId?: string | ((config: { thread_id?: string }) => string | undefined);
}

/** Core options (a new guard, whose summarizer defaults to the agent's model), or an existing guard. */
export type ContextGuardAgentMiddlewareOptions = (ContextGuardOptions | { guard: ContextGuard }) & AgentMiddlewareOptions;

/** What the last model call of a session showed of the request beyond its messages. */
interface RequestShape {
  system: SystemMessage | undefined;
  tools: ToolDefinition[] | undefined;
  model: object;
  modelId: string | undefined;
  window: number | undefined;
}

const MAX_SESSIONS = 10_000;

function isGuardOption(options: ContextGuardAgentMiddlewareOptions): options is { guard: ContextGuard } & AgentMiddlewareOptions {
  return typeof options === 'object' && options !== null && 'guard' in options && options.guard !== undefined;
}

function hasText(message: SystemMessage | undefined): message is SystemMessage {
  if (!message) return false;
  const content = message.content as unknown;
  return typeof content === 'string' ? content.length > 0 : Array.isArray(content) && content.length > 0;
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
  const shapes = new Map<string, RequestShape>();
  /** Per session, what the beforeModel hook checked last, until the model call it precedes. */
  const checked = new Map<string, { messages: readonly BaseMessage[]; shape: RequestShape | undefined }>();
  let guard: ContextGuard;
  if (isGuardOption(options)) guard = options.guard;
  else {
    const { sessionId: _sessionId, ...core } = options;
    // The agent's model, seen at its latest call in this session (the first compaction of a
    // restored thread, before any call, falls back to the mechanical digest).
    const fallback: Summarizer = (input) => {
      const model = shapes.get(input.sessionId)?.model;
      if (!model) throw new Error('context-guard: the agent has not called its model yet in this session');
      return langchainSummarizer(model as InvokableChatModel)(input);
    };
    guard = createContextGuard({ ...core, summarizer: core.summarizer ?? fallback });
  }

  function sessionOf(runtime: unknown, messages: readonly BaseMessage[]): string {
    const configurable = (runtime as { configurable?: { thread_id?: unknown } } | undefined)?.configurable ?? {};
    const threadId = typeof configurable.thread_id === 'string' && configurable.thread_id ? configurable.thread_id : undefined;
    const option = options.sessionId;
    const chosen = typeof option === 'function' ? option({ ...(threadId ? { thread_id: threadId } : {}) }) : option;
    if (typeof chosen === 'string' && chosen) return chosen;
    if (threadId) return threadId;
    return deriveSessionId(toGuardMessages(messages.slice(0, 8)));
  }

  function remember(sessionId: string, shape: RequestShape): void {
    shapes.delete(sessionId);
    shapes.set(sessionId, shape);
    if (shapes.size > MAX_SESSIONS) shapes.delete(shapes.keys().next().value as string);
  }

  /**
   * Runs the guard over a request (the system message first, then the messages) and returns the
   * messages to use instead, or undefined when the guard left them as they are.
   */
  async function guardMessages(sessionId: string, shape: RequestShape | undefined, messages: BaseMessage[]): Promise<BaseMessage[] | undefined> {
    const system = hasText(shape?.system) ? shape.system : undefined;
    const all: BaseMessage[] = system ? [system, ...messages] : messages;
    const r = await guard.beforeModel({
      sessionId,
      messages: toGuardMessages(all),
      ...(shape?.modelId ? { modelId: shape.modelId } : {}),
      ...(shape?.tools ? { tools: shape.tools } : {}),
      ...(shape?.window !== undefined ? { contextWindow: shape.window } : {}),
    });
    const out = fromGuardMessages(r.messages);
    if (sameList(out, all)) return undefined;
    // The system message is never changed by the guard: it stays in its own slot of the request.
    return system && out[0] === system ? out.slice(1) : out;
  }

  return Object.assign(
    createMiddleware({
      name: 'ContextGuardMiddleware',

      beforeModel: async (state, runtime) => {
        const messages = (state as { messages: BaseMessage[] }).messages;
        if (!Array.isArray(messages) || messages.length === 0) return undefined;
        const sessionId = sessionOf(runtime, messages);
        const shape = shapes.get(sessionId);
        // Before this process has seen the agent's model in this session (a restored thread), the
        // window may only be known from the model's profile: wrapModelCall fits that first request,
        // and this hook compacts the state from the next call on.
        if (!shape && guard.options.contextWindow === undefined) return undefined;
        const compacted = await guardMessages(sessionId, shape, messages);
        // What the model call will receive, so that wrapModelCall need not run the guard again
        // (once per model call: one estimate event, one pending request).
        checked.set(sessionId, { messages: compacted ?? messages, shape });
        // A compaction (or a tool-pairing repair) rewrites the state, so that the checkpoint holds
        // what the model sees and the next turn builds on the summary.
        if (!compacted) return undefined;
        return { messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), ...compacted] };
      },

      wrapModelCall: async (request, handler) => {
        const model = request.model as object;
        const modelId = modelIdOf(model);
        const shape: RequestShape = {
          system: request.systemMessage,
          tools: toGuardTools(request.tools as unknown[]),
          model,
          modelId,
          // A user's `models` entry for this model wins over the profile, as in withContextGuard.
          window: userModelsCover(modelId, guard.options.models) ? undefined : profileWindow(model),
        };
        const sessionId = sessionOf(request.runtime, request.messages);
        remember(sessionId, shape);
        const seen = checked.get(sessionId);
        checked.delete(sessionId);
        // The request beforeModel just checked, unchanged (same messages, system message and tools):
        // already estimated and fitted.
        const checkedAlready =
          seen?.shape && sameList(seen.messages, request.messages) && seen.shape.system === shape.system && seen.shape.tools === shape.tools;
        const messages = checkedAlready ? undefined : await guardMessages(sessionId, shape, request.messages);
        try {
          return await handler(messages ? { ...request, messages } : request);
        } catch (error) {
          // A context-length rejection: the guard recorded the provider's count and requested a
          // compaction; the request is fitted again (on a copy, as always here: the next beforeModel
          // hook finds the stored summary and writes it into the state) and sent once more. Any other
          // error, a failure on the way, or a second rejection reaches the agent as the model threw it.
          const { retry } = await guard.recoverFromOverflow({ sessionId, error });
          if (!retry) throw error;
          const again = await guardMessages(sessionId, shape, request.messages).catch(() => {
            throw error;
          });
          return handler(again ? { ...request, messages: again } : request);
        }
      },

      afterModel: async (state, runtime) => {
        const messages = (state as { messages: BaseMessage[] }).messages;
        const last = Array.isArray(messages) ? messages[messages.length - 1] : undefined;
        const usage = (last as { usage_metadata?: { input_tokens?: unknown; output_tokens?: unknown } } | undefined)?.usage_metadata;
        if (!last || typeof usage?.input_tokens !== 'number') return undefined;
        await guard.afterModel({
          sessionId: sessionOf(runtime, messages),
          usage: { inputTokens: usage.input_tokens, ...(typeof usage.output_tokens === 'number' ? { outputTokens: usage.output_tokens } : {}) },
        });
        return undefined;
      },
    }),
    { guard },
  );
}

function sameList(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
