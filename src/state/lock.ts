// Runs the tasks of one key one after another (and tasks of different keys concurrently), so that
// the read-modify-write of a session's state is never interleaved within a process.

const started = <T>(task: () => Promise<T>): Promise<T> => {
  try {
    return task();
  } catch (error) {
    return Promise.reject(error);
  }
};

const settled = Promise.resolve();

export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();
  /**
   * The key whose synchronous task (runNow) is running, if any: a task queued meanwhile starts after
   * it. One at a time: a synchronous task cannot start another one's before it ends... except from
   * inside itself (an event listener calling the guard), which `runNow` then refuses.
   */
  private busy: string | undefined;

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? (this.busy === key ? settled : undefined);
    // Uncontended (every call of an agent that waits for each model call): the task starts at once,
    // with no promise chained before it.
    const result = previous ? previous.then(task, task) : started(task);
    // Settles after the task, whatever its outcome; dropped once the queue is empty, so idle
    // sessions cost nothing.
    const done = (): void => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
    const tail: Promise<unknown> = result.then(done, done);
    this.tails.set(key, tail);
    return result;
  }

  /**
   * Runs a synchronous task at once when the key is idle (nothing running or queued), and answers
   * what it returns; undefined without running it otherwise. Nothing can interleave with a
   * synchronous task: it needs no promise, and a task `run` queues from inside it starts after it.
   */
  runNow<T>(key: string, task: () => T): T | undefined {
    if (this.busy !== undefined || this.tails.has(key)) return undefined;
    this.busy = key;
    try {
      return task();
    } finally {
      this.busy = undefined;
    }
  }
}
