// A store call that stalls must not stall the agent: every call to a user's store is raced against
// the guard's store timeout, with a timer that never keeps the process alive.

export class StoreTimeout extends Error {
  constructor(ms: number) {
    super(`the store did not answer within ${ms} ms`);
    this.name = 'StoreTimeout';
  }
}

/** `value`, or a StoreTimeout rejection after `ms` (no timer at all when `ms` is infinite). */
export async function withTimeout<T>(value: Promise<T> | T, ms: number): Promise<T> {
  if (!Number.isFinite(ms)) return await value;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreTimeout(ms)), ms);
      (timer as { unref?: () => void }).unref?.();
    });
    return await Promise.race([Promise.resolve(value), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
