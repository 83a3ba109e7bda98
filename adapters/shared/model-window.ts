// What the adapters ask a guard about a call's window, and how they report their own failures:
// through the guard's methods (contextWindowFor, reportError), never its options.
import {
  isUsableWindow,
  matchingOverride,
  type ContextGuard,
  type ContextGuardOptions,
  type ErrorEvent,
} from '../../src/index.ts';

/**
 * A call as far as its window goes: the model, and the window its host declares (a LangChain profile's
 * `maxInputTokens`).
 */
export interface WindowQuery {
  modelId?: string | undefined;
  contextWindow?: number | undefined;
}

/** Whether one of the user's `models` keys names the model; works on options not yet validated. */
export function modelsNameModel(modelId: string | undefined, models: unknown): boolean {
  if (!modelId || typeof models !== 'object' || models === null) return false;
  return matchingOverride(modelId, models as Record<string, unknown>) !== undefined;
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

/** Tells the guard's `onEvent` that something failed in the adapter and what the call did instead. Never throws. */
export function reportAdapterError(guard: ContextGuard, report: AdapterError): void {
  try {
    guard.reportError(report);
  } catch {
    // A guard of the caller's own making that throws is not the call's problem.
  }
}
