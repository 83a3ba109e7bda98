// Where a session's archive lives: in the guard's store, beside the session's state, under a key
// of its own (one value per session: its batches and receipts), so it has the store's TTL and is
// shared by every process that shares the store. A write the store fails is kept in this process
// and written with the session's next call; the archive is bounded per session, oldest batch
// evicted first. Every failure and eviction is an event, never an exception into the agent.
import { LRUCache } from 'lru-cache';
import type {
  ArchiveDeferredEvent,
  ArchiveEvictedEvent,
  ArchiveWrittenEvent,
  CompactionFencedEvent,
  StoreFailedEvent,
} from '../events.ts';
import { atMostEntries } from '../state/bounded.ts';
import { recordKey } from '../state/keys.ts';
import type { StoreOutcome } from '../state/repository.ts';
import type { StateStore } from '../state/store.ts';
import type { ArchiveBatch, CompactionReceipt, SessionArchive } from './types.ts';

/** Receipts kept per session (the newest): enough for any review, bounded for a session that runs for months. */
export const MAX_RECEIPTS = 200;

/**
 * Characters of receipts kept per session, summaries included: the newest receipts keep their
 * summaries whole; older ones beyond this keep what the compaction did without its summary (the
 * current summary is in the session's state anyway), and the oldest are dropped when even that is
 * over. 200 receipts carrying 10,000-character summaries would otherwise hold 2 MB per session,
 * with the archive off too.
 */
export const MAX_RECEIPT_CHARS = 100_000;

/** What a receipt weighs against {@link MAX_RECEIPT_CHARS}: its summary and about 40 characters per replaced message. */
export const receiptChars = (r: CompactionReceipt): number =>
  100 +
  (typeof r.summary === 'string' ? r.summary.length : 0) +
  (Array.isArray(r.replaced) ? r.replaced.length * 40 : 0);

/** `receipts` (oldest first) within {@link MAX_RECEIPTS} and {@link MAX_RECEIPT_CHARS}. */
export function boundedReceipts(receipts: CompactionReceipt[]): CompactionReceipt[] {
  const kept = receipts.length > MAX_RECEIPTS ? receipts.slice(receipts.length - MAX_RECEIPTS) : receipts.slice();
  let total = 0;
  for (let i = kept.length - 1; i >= 0; i--) {
    const r = kept[i] as CompactionReceipt;
    total += receiptChars(r);
    if (total <= MAX_RECEIPT_CHARS) continue;
    if (r.summary !== undefined) {
      const { summary, ...rest } = r;
      total -= summary.length;
      kept[i] = rest;
    }
    if (total > MAX_RECEIPT_CHARS) return kept.slice(i + 1);
  }
  return kept;
}

/** Characters an archive holds in memory: its batches' text and its receipts. */
export const archiveChars = (archive: SessionArchive): number =>
  archive.batches.reduce((n, b) => n + b.chars, 0) + archive.receipts.reduce((n, r) => n + receiptChars(r), 0);

/** The key of a session's archive: a kind of record of its own (state/keys.ts), which no session id can stand for. */
export const archiveKey = (sessionId: string): string => recordKey('archive', sessionId);

export const emptyArchive = (): SessionArchive => ({ version: 1, batches: [], receipts: [], evicted: 0 });

function isArchive(value: unknown): value is SessionArchive {
  const a = value as Partial<SessionArchive> | null;
  return typeof a === 'object' && a !== null && Array.isArray(a.batches) && Array.isArray(a.receipts);
}

/**
 * The default, in-memory home of archives: least recently used sessions' archives are dropped
 * beyond `maxSessions` or `maxTotalChars` in all, so a server with many long sessions keeps a
 * bounded footprint (a store such as Redis keeps them with a TTL instead).
 */
export class MemoryArchives implements StateStore<unknown> {
  /** Least recently used first; at most `maxSessions`, and `maxTotalChars` is held by `set`. */
  private readonly entries: LRUCache<string, { value: SessionArchive; chars: number }>;
  private total = 0;
  private readonly maxTotalChars: number;

  constructor(maxSessions: number, maxTotalChars: number, onEvict: (key: string, archive: SessionArchive) => void) {
    this.maxTotalChars = maxTotalChars;
    this.entries = new LRUCache({
      ...atMostEntries(maxSessions),
      disposeAfter: (entry, key, reason) => {
        this.total -= entry.chars;
        if (reason === 'evict') onEvict(key, entry.value);
      },
    });
  }

  /** Characters of archived text held, all sessions together. */
  get chars(): number {
    return this.total;
  }

  async get(key: string): Promise<unknown> {
    return this.entries.get(key)?.value;
  }

  async set(key: string, value: unknown): Promise<void> {
    if (!isArchive(value)) return;
    this.entries.delete(key);
    const chars = archiveChars(value);
    this.total += chars;
    this.entries.set(key, { value, chars });
    // The oldest sessions go first; the one just written stays even when it alone is over.
    while (this.entries.size > 1 && this.total > this.maxTotalChars) this.entries.pop();
  }

  async delete(key: string): Promise<void> {
    this.entries.delete(key);
  }
}

export interface ArchiveStoreOptions {
  /** The user's store; undefined: an in-memory one. */
  store: StateStore<unknown> | undefined;
  maxSessions: number;
  /** The in-memory default's bound on all sessions' archives together. */
  maxTotalChars: number;
  /** Runs a store operation with the session repository's rules: its timeout, its events, a failing store skipped for the rest of the call. */
  call: <T>(
    sessionId: string,
    operation: StoreFailedEvent['operation'],
    run: () => Promise<T>,
  ) => Promise<StoreOutcome<T>>;
  /** Characters of archived text kept per session; 0 when the archive is off (receipts only). */
  maxChars: number;
  emit: (event: ArchiveDeferredEvent | ArchiveWrittenEvent | ArchiveEvictedEvent | CompactionFencedEvent) => void;
  /** The fencing token of the session's compaction lease this call holds, if any (its writes carry it). */
  fence?: (sessionId: string) => number | undefined;
}

interface Write {
  batches: ArchiveBatch[];
  receipt: CompactionReceipt | undefined;
}

const writesChars = (writes: Write[]): number =>
  writes.reduce(
    (n, w) => n + w.batches.reduce((m, b) => m + b.chars, 0) + (w.receipt ? receiptChars(w.receipt) : 0),
    0,
  );

export class ArchiveStore {
  private readonly store: StateStore<unknown>;
  private readonly options: ArchiveStoreOptions;
  /**
   * Writes the store failed, per session, in order: written on the session's next call. All
   * sessions together hold at most `maxTotalChars` characters and `maxSessions` sessions (the
   * sessions that failed longest ago are dropped first, with an `archive-evicted` event).
   */
  private readonly pending: LRUCache<string, Write[]>;
  private pendingChars = 0;

  constructor(options: ArchiveStoreOptions) {
    this.options = options;
    this.pending = new LRUCache({
      ...atMostEntries(options.maxSessions),
      disposeAfter: (writes, sessionId, reason) => {
        this.pendingChars -= writesChars(writes);
        if (reason === 'evict') this.evictedPending(sessionId, writes);
      },
    });
    this.store =
      options.store ??
      new MemoryArchives(options.maxSessions, options.maxTotalChars, (key, archive) => {
        const labels = archive.batches.map((b) => b.label);
        if (labels.length === 0) return;
        const chars = archive.batches.reduce((n, b) => n + b.chars, 0);
        options.emit({ type: 'archive-evicted', sessionId: key.slice(archiveKey('').length), labels, chars });
      });
  }

  hasPending(sessionId: string): boolean {
    // Asked on every call; writes wait only after a store failed (lru-cache's has allocates its options).
    return this.pending.size > 0 && this.pending.has(sessionId);
  }

  /** The session's archive: the store's, with the writes still waiting in this process. */
  async read(sessionId: string): Promise<SessionArchive> {
    const got = await this.options.call(sessionId, 'get', () => this.store.get(archiveKey(sessionId)));
    const stored = got.ok && isArchive(got.value) ? got.value : undefined;
    const waiting = this.pending.peek(sessionId);
    return waiting ? this.merged(stored ?? emptyArchive(), waiting).archive : (stored ?? emptyArchive());
  }

  /**
   * Adds a compaction's batches and receipt. Resolves once the store has them, or once it failed
   * (then they wait in this process, an `archive-deferred` event says so, and the session's next
   * call writes them).
   */
  async write(sessionId: string, batches: ArchiveBatch[], receipt: CompactionReceipt | undefined): Promise<void> {
    const waiting = [...(this.pending.peek(sessionId) ?? []), { batches, receipt }];
    await this.commit(sessionId, waiting, { deferred: false });
  }

  /** Writes what the store failed earlier; a no-op when nothing waits. */
  async flush(sessionId: string): Promise<void> {
    const waiting = this.pending.peek(sessionId);
    if (waiting) await this.commit(sessionId, waiting, { deferred: true });
  }

  /** Characters of the writes waiting in this process, all sessions together. */
  get waitingChars(): number {
    return this.pendingChars;
  }

  async delete(sessionId: string): Promise<void> {
    this.forgetPending(sessionId);
    await this.options.call(sessionId, 'delete', () => this.store.delete(archiveKey(sessionId)));
  }

  private async commit(sessionId: string, waiting: Write[], { deferred }: { deferred: boolean }): Promise<void> {
    const key = archiveKey(sessionId);
    let evicted: string[] = [];
    let evictedChars = 0;
    const change = (current: unknown) => {
      const next = this.merged(isArchive(current) ? current : emptyArchive(), waiting);
      evicted = next.evicted;
      evictedChars = next.evictedChars;
      return next.archive;
    };
    const update = this.store.update?.bind(this.store);
    const fence = this.options.fence?.(sessionId);
    const done = update
      ? await this.options.call(sessionId, 'update', () =>
          update(key, change, fence === undefined ? undefined : { fence }),
        )
      : await this.options.call(sessionId, 'set', async () => this.store.set(key, change(await this.store.get(key))));
    if (!done.ok && done.fenced) {
      // A newer compaction of the session stands: this one's batches and receipt are not kept (its
      // state is not written either), but what waited from before is, with the session's next call.
      const before = waiting.slice(0, -1);
      if (before.length > 0) this.keepPending(sessionId, before);
      else this.forgetPending(sessionId);
      this.options.emit({ type: 'compaction-fenced', sessionId, record: 'archive', token: fence as number });
      return;
    }
    if (!done.ok) {
      this.keepPending(sessionId, this.boundedWaiting(sessionId, waiting));
      const labels = waiting.at(-1)?.batches.map((b) => b.label) ?? [];
      if (!deferred && labels.length > 0) this.options.emit({ type: 'archive-deferred', sessionId, labels });
      return;
    }
    this.forgetPending(sessionId);
    if (evicted.length > 0)
      this.options.emit({ type: 'archive-evicted', sessionId, labels: evicted, chars: evictedChars });
    if (deferred) {
      const labels = waiting.flatMap((w) => w.batches.map((b) => b.label));
      if (labels.length > 0) this.options.emit({ type: 'archive-written', sessionId, labels, deferred: true });
    }
  }

  private forgetPending(sessionId: string): void {
    this.pending.delete(sessionId);
  }

  /** Keeps a session's waiting writes as the newest, within the bound on all sessions' together. */
  private keepPending(sessionId: string, waiting: Write[]): void {
    this.forgetPending(sessionId);
    this.pendingChars += writesChars(waiting);
    this.pending.set(sessionId, waiting);
    // Past `maxSessions` the cache drops the oldest itself; past `maxTotalChars`, oldest first too.
    while (this.pending.size > 1 && this.pendingChars > this.options.maxTotalChars) this.pending.pop();
  }

  /** The waiting writes of a session dropped for the bound: an `archive-evicted` event says what was lost. */
  private evictedPending(sessionId: string, writes: Write[]): void {
    const labels = writes.flatMap((w) => w.batches.map((b) => b.label));
    const chars = writes.reduce((n, w) => n + w.batches.reduce((m, b) => m + b.chars, 0), 0);
    if (labels.length > 0) this.options.emit({ type: 'archive-evicted', sessionId, labels, chars });
  }

  /** `archive` with the waiting writes added (each batch once, by label) and the bound applied. */
  private merged(archive: SessionArchive, waiting: Write[]) {
    const batches = archive.batches.slice();
    const labels = new Set(batches.map((b) => b.label));
    let receipts = archive.receipts.slice();
    const receiptTimes = new Set(receipts.map((r) => `${r.at}|${r.archive.join(',')}`));
    for (const w of waiting) {
      for (const b of w.batches) if (!labels.has(b.label)) batches.push(b), labels.add(b.label);
      const r = w.receipt;
      if (r && !receiptTimes.has(`${r.at}|${r.archive.join(',')}`)) receipts.push(r);
    }
    receipts = boundedReceipts(receipts);
    const evicted: string[] = [];
    let evictedChars = 0;
    let total = batches.reduce((n, b) => n + b.chars, 0);
    // The oldest batch goes first; the newest is kept even when it alone is over the bound.
    while (batches.length > 1 && total > this.options.maxChars) {
      const old = batches.shift() as ArchiveBatch;
      total -= old.chars;
      evicted.push(old.label);
      evictedChars += old.chars;
    }
    return {
      archive: { version: 1 as const, batches, receipts, evicted: archive.evicted + evicted.length },
      evicted,
      evictedChars,
    };
  }

  /** What waits in this process is bounded like the archive itself (the oldest batches go first). */
  private boundedWaiting(sessionId: string, waiting: Write[]): Write[] {
    let total = waiting.reduce((n, w) => n + w.batches.reduce((m, b) => m + b.chars, 0), 0);
    const out = waiting.map((w) => ({ ...w, batches: w.batches.slice() }));
    const dropped: string[] = [];
    let droppedChars = 0;
    for (const w of out) {
      while (total > this.options.maxChars && w.batches.length > 0 && out.at(-1) !== w) {
        const b = w.batches.shift() as ArchiveBatch;
        total -= b.chars;
        dropped.push(b.label);
        droppedChars += b.chars;
      }
    }
    if (dropped.length > 0)
      this.options.emit({ type: 'archive-evicted', sessionId, labels: dropped, chars: droppedChars });
    // Their receipts within the receipts' bound (a long outage: one receipt per compaction).
    const receipts = out.flatMap((w, i) => (w.receipt ? [{ i, receipt: w.receipt }] : []));
    const kept = boundedReceipts(receipts.map((r) => r.receipt));
    const from = receipts.length - kept.length;
    receipts.forEach(({ i }, k) => {
      const w = out[i] as Write;
      out[i] = { ...w, receipt: k >= from ? kept[k - from] : undefined };
    });
    // A write left with neither batches nor a receipt waits for nothing.
    return out.filter((w, i) => w.batches.length > 0 || w.receipt !== undefined || i === out.length - 1);
  }
}
