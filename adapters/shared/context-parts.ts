// What a live view of the context shows, as parts a UI stream carries: the meter (`data-context-guard`,
// one id, rewritten after every estimate, compaction and real count of the session) and one entry per
// compaction (`data-context-guard-compaction`). The AI SDK adapter writes them into a UI message
// stream (writeContextParts), the LangChain agent middleware into LangGraph's custom stream mode;
// both hear the session through guard.subscribe.
import type {
  CompactionEndEvent,
  CompactionReason,
  CompactionStep,
  ContextGuard,
  ContextGuardEvent,
} from '../../src/index.ts';

/** The meter: how full the context of the session is. */
export interface ContextGuardMeter {
  /** The prompt's tokens: the guard's estimate before the call, the provider's count (prompt + answer) after it. */
  tokens: number;
  /** window − buffer: the guard compacts above it. */
  threshold: number;
  contextWindow: number;
  /** tokens / contextWindow, what a UI shows as a percentage. */
  fraction: number;
  /** Whether `tokens` is the guard's estimate or the provider's count. */
  source: 'estimate' | 'provider';
  /** Whether `fraction` reached the guard's `warnAt` (default 70%): the moment to show the meter in amber. */
  warning: boolean;
}

/** One compaction of the session. */
export interface ContextGuardCompaction {
  /** The last (strongest) step it needed: `prune`, `summary`, `mechanical` or `hard-fit`. */
  strategy: CompactionStep;
  /** `threshold` (the prompt was over it) or `manual` (guard.compact, the compact tool). */
  reason: CompactionReason;
  tokensBefore: number;
  tokensAfter: number;
  /** One line for a person: `Summarized: 96.1k → 21.4k tokens`. */
  label: string;
  /** Labels of the archive batches holding what it removed (for `recall`); empty when the archive is off. */
  archive: string[];
}

/** The data part types, keyed as the AI SDK's `UIMessage<METADATA, DATA_PARTS>` wants them. */
export type ContextGuardDataParts = {
  'context-guard': ContextGuardMeter;
  'context-guard-compaction': ContextGuardCompaction;
};

/** The parts as they are written (an AI SDK UI message chunk; a LangGraph custom stream chunk). */
export type ContextGuardPart =
  | { type: 'data-context-guard'; id: string; data: ContextGuardMeter }
  | { type: 'data-context-guard-compaction'; id: string; data: ContextGuardCompaction };

export interface WatchContextOptions {
  /** The meter part's id (default `context-guard`): one id, so that a UI updates the meter in place. */
  id?: string;
}

/** The window a meter is drawn against. */
export interface MeterScale {
  threshold: number;
  contextWindow: number;
}

const STEP_LABELS: Record<CompactionStep, string> = {
  prune: 'Pruned tool output',
  summary: 'Summarized',
  mechanical: 'Digest (summarizer failed)',
  'hard-fit': 'Cut to fit',
};

function short(n: number): string {
  if (n >= 1_000_000) return `${+(n / 1_000_000).toFixed(1)}M`;
  if (n >= 1_000) return `${+(n / 1_000).toFixed(1)}k`;
  return String(Math.round(n));
}

/** `Summarized: 96.1k → 21.4k tokens`. */
export function compactionLabel(strategy: CompactionStep, tokensBefore: number, tokensAfter: number): string {
  return `${STEP_LABELS[strategy] ?? strategy}: ${short(tokensBefore)} → ${short(tokensAfter)} tokens`;
}

export interface ContextWatch {
  /** Stops listening (idempotent). */
  stop(): void;
  /**
   * Stops, then writes the session's status once more when it differs from the last meter written:
   * resolves after it. A store that records usage asynchronously (Redis) may record the last call's
   * count after the stream part that ended it; the status read waits for it (one session, one lock).
   * With `onlyMissed`, the status is read only when a count was heard that could not be written (no
   * window known to draw it against).
   */
  finish(options?: { onlyMissed?: boolean }): Promise<void>;
}

/** The part of the `count`-th compaction a watch with this `id` heard. */
function compactionPart(id: string, count: number, event: CompactionEndEvent): ContextGuardPart {
  const { strategy, reason, tokensBefore, tokensAfter, receipt } = event;
  return {
    type: 'data-context-guard-compaction',
    id: `${id}-compaction-${receipt?.at ?? ''}-${count}`,
    data: {
      strategy,
      reason,
      tokensBefore,
      tokensAfter,
      label: compactionLabel(strategy, tokensBefore, tokensAfter),
      archive: [...(receipt?.archive ?? [])],
    },
  };
}

/** Hears one session of `guard` and writes its meter and compactions with `write` until stopped. */
export function watchContext(
  guard: ContextGuard,
  sessionId: string,
  write: (part: ContextGuardPart) => void,
  options: WatchContextOptions & { scale?: MeterScale | undefined } = {},
): ContextWatch {
  const id = options.id ?? 'context-guard';
  const warnAt = guard.options.warnAt;
  let last: ContextGuardMeter | undefined;
  let scale = options.scale;
  let compactions = 0;
  let stopped = false;
  let missed = false;

  const safeWrite = (part: ContextGuardPart): void => {
    try {
      write(part);
    } catch {
      // A closed stream must not fail the model call that reports to it.
    }
  };
  const meter = (tokens: number, source: ContextGuardMeter['source'], window?: MeterScale) => {
    if (window) scale = window;
    if (!scale) {
      missed = true;
      return;
    }
    const { threshold, contextWindow } = scale;
    const fraction = tokens / contextWindow;
    last = { tokens, threshold, contextWindow, fraction, source, warning: fraction >= warnAt };
    safeWrite({ type: 'data-context-guard', id, data: last });
  };

  const listener = (event: ContextGuardEvent): void => {
    switch (event.type) {
      case 'estimate':
        if (event.contextWindow !== undefined && event.threshold !== undefined)
          meter(event.tokens, 'estimate', { threshold: event.threshold, contextWindow: event.contextWindow });
        return;
      case 'compaction-end':
        compactions += 1;
        safeWrite(compactionPart(id, compactions, event));
        meter(event.tokensAfter, 'estimate');
        return;
      case 'usage-recorded':
        meter(event.inputTokens + (event.outputTokens ?? 0), 'provider');
        return;
      default:
        return;
    }
  };
  const unsubscribe = guard.subscribe(sessionId, listener);

  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    unsubscribe();
  };
  const finish = async ({ onlyMissed = false } = {}): Promise<void> => {
    stop();
    if (onlyMissed && !missed) return;
    let status: Awaited<ReturnType<ContextGuard['status']>>;
    try {
      status = await guard.status(sessionId);
    } catch {
      return;
    }
    if (!status) return;
    if (last && last.tokens === status.tokens && last.source === status.source) return;
    const window = { threshold: status.threshold, contextWindow: status.contextWindow };
    meter(status.tokens, status.source, window);
  };
  return { stop, finish };
}
