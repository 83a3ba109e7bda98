// Every adapter takes either an existing guard (`{ guard }`, shared with other adapters or
// processes) or the core options of a guard it creates for itself: with the adapter's own options
// left out (the core rejects keys it does not know) and the summarizer defaulting to the model the
// adapter wraps.
import { createContextGuard, type ContextGuard, type ContextGuardOptions, type Summarizer } from '../../src/index.ts';

/** What an adapter takes: core options (a guard of its own) or an existing guard, with its own options. */
export type GuardOrOptions<AdapterOptions extends object> = (ContextGuardOptions | { guard: ContextGuard }) &
  AdapterOptions;

/** Whether the options name an existing guard. */
export function isGuardOption(options: unknown): options is { guard: ContextGuard } {
  return (
    typeof options === 'object' &&
    options !== null &&
    'guard' in options &&
    (options as { guard?: unknown }).guard !== undefined
  );
}

export interface OwnedGuardDefaults {
  /** The summarizer of a guard created here when the options name none; made only then. */
  summarizer: () => Summarizer;
  /** The window of a guard created here when the options set none (the model's own, say); undefined leaves it unset. */
  contextWindow?: (core: ContextGuardOptions) => number | undefined;
}

export interface AdapterGuard {
  guard: ContextGuard;
  /** Whether the adapter created the guard (and so its summarizer may be the adapter's model). */
  owned: boolean;
}

/**
 * The adapter's guard: the one given, or one created from the core options, without the adapter's
 * own option keys, and with the adapter's defaults for what the options leave unset.
 */
export function adapterGuard<AdapterOptions extends object>(
  options: GuardOrOptions<AdapterOptions>,
  adapterKeys: ReadonlyArray<keyof AdapterOptions>,
  defaults: OwnedGuardDefaults,
): AdapterGuard {
  if (isGuardOption(options)) return { guard: options.guard, owned: false };
  const core = { ...options } as Record<string, unknown>;
  for (const key of adapterKeys) delete core[key as string];
  const coreOptions = core as ContextGuardOptions;
  const contextWindow = coreOptions.contextWindow ?? defaults.contextWindow?.(coreOptions);
  const guard = createContextGuard({
    ...coreOptions,
    ...(contextWindow !== undefined ? { contextWindow } : {}),
    summarizer: coreOptions.summarizer ?? defaults.summarizer(),
  });
  return { guard, owned: true };
}

/**
 * A summarizer that calls the model of the session's latest call (as the adapter saw it), so that
 * a guard created by the adapter summarizes with the model it guards. Throws when the adapter has
 * not seen a call of the session yet (a restored conversation): the guard then uses its mechanical digest.
 */
export function latestModelSummarizer<Model>(
  modelOf: (sessionId: string) => Model | undefined,
  summarizerOf: (model: Model) => Summarizer,
  notSeen: string,
): Summarizer {
  return (input) => {
    const model = modelOf(input.sessionId);
    if (model === undefined) throw new Error(`context-guard: ${notSeen}`);
    return summarizerOf(model)(input);
  };
}
