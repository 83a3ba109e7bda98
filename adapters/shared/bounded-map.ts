// What an adapter remembers per session, run or tool call (the model of a session's latest call, a
// run's metadata until it ends...) must not grow without end in a server that sees millions of them.

/**
 * A Map that holds at most `max` entries: writing an entry makes it the newest, and a write beyond
 * the limit forgets the entry written longest ago. Reads do not change the order (every adapter
 * writes on each call it sees, so the order of writes is the order of use).
 */
export class BoundedMap<K, V> extends Map<K, V> {
  readonly max: number;

  constructor(max: number) {
    super();
    if (!Number.isInteger(max) || max < 1)
      throw new RangeError(`BoundedMap: max must be a positive integer; got ${String(max)}`);
    this.max = max;
  }

  override set(key: K, value: V): this {
    // Deleting first moves the key to the end of the insertion order: it becomes the newest.
    super.delete(key);
    super.set(key, value);
    if (this.size > this.max) super.delete(this.keys().next().value as K);
    return this;
  }
}
