// Where per-session state lives. The interface is deliberately tiny (async get / set / delete) so
// that a Redis, SQL or KV store is a few lines; the guard treats stored values as immutable and
// always writes a new object, so stores may keep values by reference or serialize them.

export interface StateStore<T> {
  get(sessionId: string): Promise<T | undefined>;
  set(sessionId: string, value: T): Promise<void>;
  delete(sessionId: string): Promise<void>;
}
