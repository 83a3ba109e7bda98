// The guard's last line of defence against its own bugs: when a call fails inside the guard, it
// fails closed. It sends the smallest prompt that fits (system messages, a digest of the rest, the
// latest user request), never the raw input, which may be far over the window.
import type { BeforeModelInput, BeforeModelResult } from '../api.ts';
import type { ResolvedOptions } from '../config.ts';
import type { GuardMessage, UserMessage } from '../messages.ts';
import { mechanicalSummary } from '../compaction/mechanical.ts';
import { summaryMessage } from '../compaction/placement.ts';
import { clipMiddle, mediaLabel } from '../compaction/text.ts';
import { CHARS_PER_TOKEN, measureMessage } from '../tokens/heuristic.ts';
import { validMessages } from './check.ts';
import type { CallResolver } from './measure.ts';

/** Fewest characters kept of the latest request when even it must be cut. */
const MIN_REQUEST_CHARS = 200;

/**
 * The smallest prompt that fits `threshold` at `correction` provider tokens per heuristic token:
 * the system messages, a mechanical digest of everything else (when it fits), and the latest user
 * request, whole when it fits, else cut in the middle with a marker. Built from the plainest
 * functions only (it runs after something else failed) and never throws.
 */
export function minimalPrompt(
  messages: readonly GuardMessage[],
  threshold: number,
  correction: number,
): GuardMessage[] {
  const tokensOf = (m: GuardMessage): number => {
    try {
      const measure = measureMessage(m, 'generic');
      return (measure.chars / CHARS_PER_TOKEN) * correction + measure.mediaTokens;
    } catch {
      return Number.POSITIVE_INFINITY;
    }
  };
  const valid = validMessages(messages).messages;
  const systems = valid.filter((m) => m.role === 'system');
  let requestIndex = -1;
  for (let i = valid.length - 1; i >= 0 && requestIndex < 0; i--) if (valid[i]?.role === 'user') requestIndex = i;
  let room = threshold - systems.reduce((n, m) => n + tokensOf(m), 0);
  const out: GuardMessage[] = [...systems];
  let request = requestIndex >= 0 ? (valid[requestIndex] as UserMessage) : undefined;
  if (request) {
    const cost = tokensOf(request);
    try {
      if (!(cost <= room))
        request = clippedRequest(request, Math.max(MIN_REQUEST_CHARS, (room / correction) * CHARS_PER_TOKEN - 200));
    } catch {
      // A request whose parts cannot even be read cannot be sent either.
      request = { role: 'user', content: '[The latest message could not be read.]' };
    }
    room -= tokensOf(request);
  }
  try {
    const rest = valid.filter((m, i) => m.role !== 'system' && i !== requestIndex);
    if (rest.length > 0 && room > 0) {
      const maxChars = Math.floor(((room * 0.8) / correction) * CHARS_PER_TOKEN) - 200;
      if (maxChars > 400) out.push(summaryMessage(mechanicalSummary(rest, { maxChars })));
    }
  } catch {
    // The digest is a courtesy: the request alone is a valid prompt.
  }
  if (request) out.push(request);
  return out;
}

/** The request's text cut to about `maxChars`; its media named instead of sent. */
function clippedRequest(request: UserMessage, maxChars: number): UserMessage {
  const text =
    typeof request.content === 'string'
      ? request.content
      : request.content
          .map((part) =>
            part?.type === 'text'
              ? part.text
              : part?.type === 'image'
                ? mediaLabel('image', { data: part.image, mediaType: part.mediaType })
                : mediaLabel('file', part),
          )
          .join('\n');
  return { role: 'user', content: text.length > maxChars ? clipMiddle(text, Math.floor(maxChars)) : text };
}

/**
 * The prompt a call that failed inside the guard sends, with its estimate at `correction`: the
 * smallest prompt that fits `threshold` (see minimalPrompt); the messages as they are when no
 * threshold is known (no window: every call for that model is unguarded). Never throws.
 */
export function failClosedPrompt(
  messages: readonly GuardMessage[],
  threshold: number,
  correction: number,
): { messages: GuardMessage[]; tokens: number } {
  if (!Number.isFinite(threshold)) return { messages: messages.slice(), tokens: 0 };
  const out = minimalPrompt(messages, threshold, correction);
  let tokens = 0;
  for (const m of out) {
    try {
      const measure = measureMessage(m, 'generic');
      tokens += (measure.chars / CHARS_PER_TOKEN) * correction + measure.mediaTokens;
    } catch {
      // Counted as nothing: minimalPrompt already priced what it kept.
    }
  }
  return { messages: out, tokens: Math.ceil(tokens) };
}

/**
 * A call that failed inside the guard: never the raw input, the smallest prompt that fits (unguarded only without any
 * window).
 */
export function failClosed(
  resolver: CallResolver,
  options: ResolvedOptions,
  input: BeforeModelInput | undefined,
  messages: readonly GuardMessage[],
): BeforeModelResult {
  const sessionId = input?.sessionId ?? '';
  // The configured window, else the fallback, if resolving it again is what failed: never none.
  let contextWindow = options.contextWindow ?? options.fallbackContextWindow;
  try {
    contextWindow = resolver.window(sessionId, input?.modelId, input?.contextWindow);
  } catch {
    // Keep the configured or fallback window.
  }
  const threshold = resolver.threshold(sessionId, contextWindow);
  const sent = failClosedPrompt(validMessages(messages).messages, threshold, options.calibration.default);
  return { ...sent, threshold, contextWindow, fraction: contextWindow ? sent.tokens / contextWindow : 0 };
}
