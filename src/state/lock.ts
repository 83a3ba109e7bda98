// Runs the tasks of one key one after another (and tasks of different keys concurrently), so that
// the read-modify-write of a session's state is never interleaved within a process.

const started = <T>(task: () => Promise<T>): Promise<T> => {
  try {
    return task();
  } catch (error) {
    return Promise.reject(error);
  }
};

export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key);
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
}
