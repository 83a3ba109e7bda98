// The adapters' side of overflow recovery: after a model call failed, the guard decides whether the
// error is a context-length rejection (then it has recorded the provider's count and requested a
// compaction, as one operation); the adapter then guards the call again and sends it once more.
import type { ContextGuard } from '../../src/index.ts';

/**
 * The call guarded again after a context-length rejection (`reguard` runs beforeModel once more:
 * it compacts); undefined for any other error, for a call without a session, or when anything fails
 * on the way. Undefined always means: the caller throws the provider's error as it was.
 */
export async function retryAfterOverflow<Call>(
  guard: ContextGuard,
  sessionId: string | undefined,
  error: unknown,
  reguard: () => Promise<Call>,
): Promise<Call | undefined> {
  if (!sessionId) return undefined;
  try {
    const { retry } = await guard.recoverFromOverflow({ sessionId, error });
    return retry ? await reguard() : undefined;
  } catch {
    return undefined;
  }
}
