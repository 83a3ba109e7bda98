import { describe, expect, it, vi } from 'vitest';
import { retryAfterOverflow } from '../../../adapters/shared/overflow-retry.ts';
import { createContextGuard, type ContextGuard } from '../../../src/index.ts';

type FakeGuard = ContextGuard & { recoverFromOverflow: ReturnType<typeof vi.fn> };
const fakeGuard = (recover: () => Promise<{ retry: boolean }>) =>
  ({ recoverFromOverflow: vi.fn(recover) }) as unknown as FakeGuard;

describe('retryAfterOverflow', () => {
  it('a context-length rejection: the call guarded again', async () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    await guard.beforeModel({ sessionId: 's', messages: [{ role: 'user', content: 'hi' }] });
    const error = new Error(
      "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
    );
    const reguard = vi.fn(async () => 'guarded again');
    expect(await retryAfterOverflow(guard, 's', error, reguard)).toBe('guarded again');
    expect(reguard).toHaveBeenCalledTimes(1);
  });

  it('any other error: undefined, and the call is not guarded again', async () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    const reguard = vi.fn(async () => 'x');
    expect(await retryAfterOverflow(guard, 's', new Error('socket hang up'), reguard)).toBeUndefined();
    expect(reguard).not.toHaveBeenCalled();
  });

  it('a call without a session: undefined, the guard is not asked', async () => {
    const guard = fakeGuard(async () => ({ retry: true }));
    expect(await retryAfterOverflow(guard, undefined, new Error('too long'), async () => 'x')).toBeUndefined();
    expect(guard.recoverFromOverflow).not.toHaveBeenCalled();
  });

  it("a failure on the way (the guard, or guarding again): undefined, so the caller throws the provider's error", async () => {
    const failing = fakeGuard(() => Promise.reject(new Error('store down')));
    expect(await retryAfterOverflow(failing, 's', new Error('too long'), async () => 'x')).toBeUndefined();
    const retrying = fakeGuard(async () => ({ retry: true }));
    expect(
      await retryAfterOverflow(retrying, 's', new Error('too long'), () => Promise.reject(new Error('conversion bug'))),
    ).toBeUndefined();
  });
});
