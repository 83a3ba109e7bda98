// What the adapters need to know from a guard, asked in one place. The core does not offer these
// yet, so they are computed here from the guard's resolved options, with the core's own rules;
// no other adapter module reads `guard.options`. Each function says what it stands for in the
// core: once the core has it, its body becomes that one call.
import { MIN_CONTEXT_WINDOW } from '../../src/config.ts';
import { resolveModelInfo, type ContextGuard, type ContextGuardOptions, type ErrorEvent } from '../../src/index.ts';

/** A call as far as its window goes: the model, and the window its host declares (a LangChain profile's `maxInputTokens`). */
export interface WindowQuery {
  modelId?: string | undefined;
  contextWindow?: number | undefined;
}

/** A host's window the guard takes: a finite number of tokens, at least the guard's minimum (below it, a placeholder or a fraction). */
export function isUsableWindow(window: unknown): window is number {
  return typeof window === 'number' && Number.isFinite(window) && window >= MIN_CONTEXT_WINDOW;
}

/**
 * Whether one of the user's `models` keys names the model (the registry's own matching: normalized,
 * longest prefix at a name boundary). The values are not read, so options not yet validated are fine.
 * Core: `matchingOverride(modelId, models): string | undefined` in src/tokens/windows.ts.
 */
export function modelsNameModel(modelId: string | undefined, models: unknown): boolean {
  if (!modelId || typeof models !== 'object' || models === null) return false;
  // Each key alone, with a window no built-in entry has: the result is that window only when the key matched.
  return Object.keys(models).some((key) => resolveModelInfo(modelId, { [key]: 0.5 })?.contextWindow === 0.5);
}

/**
 * The window `guard` uses for a call, the user's settings first: its `contextWindow` option; else a
 * `models` entry naming the model; else the window the host declares, when usable; else the
 * registry's. Undefined when none is known. Pure: no event (beforeModel reports an unknown window).
 * Core: `guard.contextWindowFor(query)`.
 */
export function contextWindowFor(guard: ContextGuard, query: WindowQuery): number | undefined {
  const { contextWindow, models } = guard.options;
  if (contextWindow !== undefined) return contextWindow;
  const { modelId } = query;
  if (modelId && modelsNameModel(modelId, models)) return resolveModelInfo(modelId, models)?.contextWindow;
  if (isUsableWindow(query.contextWindow)) return query.contextWindow;
  return modelId ? resolveModelInfo(modelId)?.contextWindow : undefined;
}

/**
 * The window a guard an adapter creates is given for the model it wraps: the user's `contextWindow`;
 * else, unless a `models` entry names the model, the window the model declares, when usable.
 */
export function ownedGuardWindow(core: ContextGuardOptions, query: WindowQuery): number | undefined {
  if (core.contextWindow !== undefined) return core.contextWindow;
  if (modelsNameModel(query.modelId, core.models)) return undefined;
  return isUsableWindow(query.contextWindow) ? query.contextWindow : undefined;
}

/** A failure in an adapter, at one of the guard's stages. */
export interface AdapterError {
  sessionId?: string | undefined;
  stage: ErrorEvent['stage'];
  error: unknown;
}

/**
 * Tells the guard's `onEvent` that something failed in the adapter (a prompt it could not read, a
 * session function that threw) and what the call did instead. Never throws.
 * Core: `guard.reportError({ sessionId?, stage, error })`, through the guard's own event emitter.
 */
export function reportAdapterError(guard: ContextGuard, report: AdapterError): void {
  const { sessionId, stage, error } = report;
  try {
    guard.options.onEvent?.({ type: 'error', ...(sessionId ? { sessionId } : {}), stage, error });
  } catch {
    // onEvent's own failures are not the caller's problem.
  }
}
