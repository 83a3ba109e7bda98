// A plain in-memory store for bench/survival.ts that lets the benchmark look at what the guard
// archived: the archive of a session is a value of its own in the guard's store, beside the
// session's state (`{ batches: [{ items: [{ id, text }] }], evicted }`). The benchmark reads it only
// to explain a recall miss (was the fact archived at all?), never to score recall.
import type { SessionState, StateStore } from '../../src/index.ts';

interface ArchiveLike {
  batches: Array<{ items: Array<{ id: string; text: string }> }>;
  evicted?: number;
}

const isArchive = (v: unknown): v is ArchiveLike =>
  typeof v === 'object' && v !== null && Array.isArray((v as ArchiveLike).batches);

export class RecordingStore implements StateStore<SessionState> {
  private readonly values = new Map<string, unknown>();

  async get(key: string): Promise<SessionState | undefined> {
    return this.values.get(key) as SessionState | undefined;
  }

  async set(key: string, value: SessionState): Promise<void> {
    this.values.set(key, value);
  }

  async delete(key: string): Promise<void> {
    this.values.delete(key);
  }

  /** The archive stored for `sessionId` (under a key of its own that ends with the session id). */
  archive(sessionId: string): ArchiveLike | undefined {
    for (const [key, value] of this.values)
      if (key !== sessionId && key.endsWith(sessionId) && isArchive(value)) return value;
    return undefined;
  }

  /** Ids of the archived items whose text holds `needle`. */
  holders(sessionId: string, needle: string): Set<string> {
    const ids = new Set<string>();
    for (const batch of this.archive(sessionId)?.batches ?? [])
      for (const item of batch.items) if (item.text.includes(needle)) ids.add(item.id);
    return ids;
  }
}
