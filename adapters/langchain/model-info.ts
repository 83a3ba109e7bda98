// What the LangChain adapters read off a chat model and a run: the model's name (for the registry's
// window and the media pricing), the window its profile declares, and LangGraph's thread id.
import type { ContextGuard } from '../../src/index.ts';

/** The model's name (`model`, else `modelName`, as provider integrations expose it). */
export function modelIdOf(model: object): string | undefined {
  const m = model as { model?: unknown; modelName?: unknown };
  return typeof m.model === 'string' && m.model
    ? m.model
    : typeof m.modelName === 'string' && m.modelName
      ? m.modelName
      : undefined;
}

/** `profile.maxInputTokens` (LangChain 1.x model profiles); undefined when the model has none, or reading it throws. */
export function profileWindow(model: object): number | undefined {
  try {
    const window = (model as { profile?: { maxInputTokens?: unknown } }).profile?.maxInputTokens;
    return typeof window === 'number' && Number.isFinite(window) && window > 0 ? window : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The window to give the guard with a call of `model`: the user's settings first (the guard's
 * `contextWindow`, a `models` entry naming the model), then the model's profile, then the registry
 * by the model's name; never LangChain's 4,097-token fallback. Undefined when none is known.
 */
export function callWindow(guard: ContextGuard, model: object, modelId: string | undefined): number | undefined {
  return guard.contextWindowFor({ modelId, contextWindow: profileWindow(model) });
}

/** LangGraph's thread id in a runnable config or an agent's runtime (`configurable.thread_id`), as it is. */
export function threadIdOf(config: unknown): unknown {
  try {
    return (config as { configurable?: { thread_id?: unknown } } | undefined)?.configurable?.thread_id;
  } catch {
    return undefined;
  }
}
