// The adapters' side of overflow recovery: after a model call failed, the guard decides whether the
// error is a context-length rejection (then it has recorded the provider's count and requested a
// compaction, as one operation); the adapter then guards the call again and sends it once more.
import type { ContextGuard } from '../../src/index.ts';

/**
 * The call guarded again after a context-length rejection (`reguard` runs beforeModel once more:
 * it compacts); undefined for any other error, for a call without a session, or when anything fails
 * on the way. Undefined always means: the caller throws the provider's error as it was.
 *
 * `signal` is the call's: once it fired, whoever would read the retry is gone, so no retry is
 * prepared (the rejection's count is still recorded) and none is returned if it fired during the
 * compaction (which it aborted: the summarizer's signal fires with it).
 */
export async function retryAfterOverflow<Call>(
  guard: ContextGuard,
  sessionId: string | undefined,
  error: unknown,
  reguard: () => Promise<Call>,
  signal?: AbortSignal,
): Promise<Call | undefined> {
  if (!sessionId) return undefined;
  try {
    const { retry } = await guard.recoverFromOverflow({ sessionId, error });
    if (!retry || signal?.aborted) return undefined;
    const call = await reguard();
    return signal?.aborted ? undefined : call;
  } catch {
    return undefined;
  }
}
