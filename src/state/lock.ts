// Runs the tasks of one key one after another (and tasks of different keys concurrently), so that
// the read-modify-write of a session's state is never interleaved within a process.

const started = <T>(task: () => T | Promise<T>): Promise<T> => {
  try {
    return Promise.resolve(task());
  } catch (error) {
    return Promise.reject(error);
  }
};

const settled = Promise.resolve();

export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();
  /**
   * The key whose task is running its synchronous part, if any: a task of that key queued meanwhile
   * starts after it. One at a time: a synchronous part cannot start another one's before it ends...
   * except from inside itself (an event listener calling the guard), which `run` then starts as a
   * promise.
   */
  private busy: string | undefined;

  /**
   * Runs `task` as the key's only task: at once when the key is idle (nothing running or queued),
   * else after the tasks before it. A synchronous task run at once answers its value itself, with no
   * promise: nothing can interleave with it, and a task queued from inside it (an event listener
   * calling the guard) starts after it. A task that answers a promise holds the key until it settles.
   */
  run<T>(key: string, task: () => T | Promise<T>): T | Promise<T> {
    const previous = this.tails.get(key) ?? (this.busy === key ? settled : undefined);
    if (previous) return this.hold(key, previous.then(task, task));
    // Inside another key's synchronous task: started at once, answered as a promise.
    if (this.busy !== undefined) return this.hold(key, started(task));
    this.busy = key;
    let result: T | Promise<T>;
    try {
      result = task();
    } finally {
      this.busy = undefined;
    }
    // Uncontended (every call of an agent that waits for each model call): no promise chained before
    // it, and none at all when it finished synchronously.
    return result instanceof Promise ? this.hold(key, result) : result;
  }

  /** Holds the key until `result` settles, whatever its outcome; dropped once the queue is empty. */
  private hold<T>(key: string, result: Promise<T>): Promise<T> {
    const done = (): void => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
    const tail: Promise<unknown> = result.then(done, done);
    this.tails.set(key, tail);
    return result;
  }
}
