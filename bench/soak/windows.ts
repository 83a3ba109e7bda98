// The "unknown window" class of the soak (issue 21): conversations whose model no registry knows,
// with no window from the options or the host, so that the guard measures them against its
// `fallbackContextWindow`; in some of them the provider's own window is smaller and it rejects the
// first request over it with its real error (OpenAI's wording and wire shape, as the AI SDK throws
// it), naming its limit: the guard must learn that limit as the model's window and fit the retry.
// Arbitraries and builders only; the checks are in soak.ts. Pure functions of their arguments.
import fc from 'fast-check';

export interface UnknownWindowSpec {
  /**
   * The model: one shared by the batch's conversations, none at all, or one of its own (the
   * provider-limit conversations always have their own: a limit is learned per model and guard).
   */
  model: 'shared' | 'none' | 'own';
  /** The provider's window as a share of the fallback (under its 80% threshold), when it has one. */
  limitShare: number | undefined;
}

export const unknownWindowArb: fc.Arbitrary<UnknownWindowSpec> = fc
  .record({
    model: fc.constantFrom('shared' as const, 'none' as const, 'own' as const),
    limitShare: fc.option(
      fc.integer({ min: 30, max: 75 }).map((n) => n / 100),
      { freq: 2, nil: undefined },
    ),
  })
  .map((s) => (s.limitShare !== undefined ? { ...s, model: 'own' as const } : s));

/** Model ids no catalog or table knows. */
export const SHARED_UNKNOWN_MODEL = 'acme-unlisted-7';

/** The conversation's model id (undefined: the calls carry none). */
export function unknownModelId(spec: UnknownWindowSpec, conversation: number): string | undefined {
  if (spec.model === 'none') return undefined;
  return spec.model === 'shared' ? SHARED_UNKNOWN_MODEL : `my-org/finetune-${conversation}`;
}

/** The provider's window: a share of the fallback, at least 2,000 tokens. */
export function providerLimit(spec: UnknownWindowSpec, fallback: number): number | undefined {
  return spec.limitShare === undefined ? undefined : Math.max(2_000, Math.round(fallback * spec.limitShare));
}

/**
 * OpenAI's rejection of a prompt over its window, as the AI SDK throws it (an APICallError with the
 * body as text and parsed): "This model's maximum context length is N tokens. However, your messages
 * resulted in M tokens...", code `context_length_exceeded`.
 */
export function tooLongError(limit: number, tokens: number): Error {
  const body = {
    error: {
      message: `This model's maximum context length is ${limit} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  };
  const error = new Error(body.error.message);
  Object.assign(error, {
    name: 'AI_APICallError',
    statusCode: 400,
    responseBody: JSON.stringify(body),
    data: body,
    isRetryable: false,
  });
  return error;
}
