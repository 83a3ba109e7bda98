// Lossless compaction, the guard's side: every compaction archives the originals of what it takes
// out of the prompt (before that prompt is sent) with a receipt of what it did, and recall finds
// them again. The archive lives beside the session state in the same store (store.ts); the search
// index is per process (recall.ts).
import { quotedId } from '../compaction/quoted-id.ts';
import type { CompactionMemo, View } from '../compaction/memo.ts';
import { clipMiddle } from '../compaction/text.ts';
import type { CompactionResult } from '../compaction/contract.ts';
import type { ContextGuardEvent } from '../events.ts';
import type { GuardMessage } from '../messages.ts';
import { BoundedMap } from '../state/bounded.ts';
import type { StateStore } from '../state/store.ts';
import { archiveItems, replacedMessages, replacementsOf } from './items.ts';
import { RecallIndex } from './recall.ts';
import { ArchiveStore, type ArchiveStoreOptions } from './store.ts';
import type { ArchiveBatch, ArchivedItem, CompactionReceipt, RecalledItem, RecallOptions } from './types.ts';

/** No item is cut below this, whatever `archive.maxChars` says. */
const MIN_ITEM_CHARS = 10_000;

/**
 * One original larger than half the archive's bound (a 100 MB tool output) is kept as its head and
 * tail with a marker saying how much was left out: whole, it would evict everything else and stall
 * every store write and search of the session.
 */
function boundedItem(item: ArchivedItem, maxChars: number): ArchivedItem {
  if (item.text.length <= maxChars) return item;
  const { cutAt: _cutAt, ...rest } = item;
  return { ...rest, text: clipMiddle(item.text, maxChars, 'too large to archive whole') };
}

/** The header every batch starts with. */
export function batchHeader(depth: number, start: string, end: string, count: number): string {
  return `[depth:${depth}|start:${start}|end:${end}|count:${count}]`;
}

export function batchOf(label: string, depth: number, start: string, end: string, items: ArchivedItem[]): ArchiveBatch {
  return {
    label,
    depth,
    start,
    end,
    header: batchHeader(depth, start, end, items.length),
    items,
    chars: items.reduce((n, item) => n + item.text.length, 0),
  };
}

export interface ArchiveSettings {
  /** False: no originals are kept (receipts still are). */
  enabled: boolean;
  maxChars: number;
  maxTotalChars: number;
  recallMaxChars: number;
  /** Characters of archived text indexed for recall in this process, all sessions together. */
  indexChars: number;
}

/** What one compaction hands to the archive. */
export interface ArchiveRecord {
  sessionId: string;
  label: string;
  start: string;
  end: string;
  input: readonly GuardMessage[];
  before: View;
  after: View;
  oldMemo: CompactionMemo;
  newMemo: CompactionMemo;
  hashOf: (index: number) => number;
  result: Omit<CompactionResult, 'durationMs' | 'cacheBrokenTokens'>;
  /** Batches the compaction wrote itself (a clip-archive re-summarization). */
  extraBatches: ArchiveBatch[];
  redact: (text: string) => string;
}

export class Archive {
  readonly settings: ArchiveSettings;
  private readonly store: ArchiveStore;
  private readonly index: RecallIndex;
  /** Labels given out per session in this process, so two compactions in one millisecond differ. */
  private readonly lastLabel = new BoundedMap<string, string>(10_000);

  constructor(
    settings: ArchiveSettings,
    store: StateStore<unknown> | undefined,
    maxSessions: number,
    call: ArchiveStoreOptions['call'],
    emit: (event: ContextGuardEvent) => void,
    fence?: ArchiveStoreOptions['fence'],
  ) {
    this.settings = settings;
    this.store = new ArchiveStore({
      store,
      maxSessions,
      maxTotalChars: settings.maxTotalChars,
      call,
      maxChars: settings.enabled ? settings.maxChars : 0,
      emit,
      fence,
    });
    this.index = new RecallIndex(maxSessions, undefined, settings.indexChars);
  }

  /**
   * `compaction-batch-{sessionId}-{ISO}` for a batch ending at `at` (a millisecond later if that one
   * was taken); a long session id is quoted short (quotedId), since the label is quoted in the summary.
   */
  label(sessionId: string, at: number): { label: string; end: string } {
    let time = at;
    const id = quotedId(sessionId);
    const make = () => `compaction-batch-${id}-${new Date(time).toISOString()}`;
    const last = this.lastLabel.peek(id);
    while (last !== undefined && make() <= last) time++;
    const label = make();
    this.lastLabel.set(id, label);
    return { label, end: new Date(time).toISOString() };
  }

  /** Archives what a compaction replaced and stores its receipt; resolves once stored (or deferred). */
  async record(r: ArchiveRecord): Promise<CompactionReceipt> {
    const replacements = replacementsOf(r.before, r.after, r.oldMemo, r.newMemo, r.hashOf);
    const batches: ArchiveBatch[] = [];
    if (this.settings.enabled) {
      // A clip-archive batch summary joins the originals it stands for, in the compaction's batch.
      const own = r.extraBatches.filter((b) => b.label === r.label).flatMap((b) => b.items);
      const items = [...archiveItems(r.input, replacements, r.label, r.redact, r.newMemo.tools), ...own].map((item) =>
        boundedItem(item, Math.max(MIN_ITEM_CHARS, Math.floor(this.settings.maxChars / 2))),
      );
      if (items.length > 0) batches.push(batchOf(r.label, 0, r.start, r.end, items));
      batches.push(...r.extraBatches.filter((b) => b.label !== r.label));
    }
    const receipt: CompactionReceipt = {
      at: r.end,
      reason: r.result.reason,
      strategy: r.result.strategy,
      steps: r.result.steps,
      tokensBefore: r.result.tokensBefore,
      tokensAfter: r.result.tokensAfter,
      replaced: replacedMessages(r.input, replacements),
      archive: batches.map((b) => b.label),
      ...(r.result.summary !== undefined ? { summary: r.result.summary } : {}),
    };
    await this.store.write(r.sessionId, batches, receipt);
    return receipt;
  }

  /** Whether batches the store failed wait in this process (a map lookup: checked on every call). */
  hasPending(sessionId: string): boolean {
    return this.store.hasPending(sessionId);
  }

  /** Writes what the store failed to take earlier. */
  flush(sessionId: string): Promise<void> {
    return this.store.flush(sessionId);
  }

  async recall(sessionId: string, options: RecallOptions, maxChars: number): Promise<RecalledItem[]> {
    if (!this.settings.enabled) return [];
    const archive = await this.store.read(sessionId);
    return this.index.recall(sessionId, archive, options, maxChars);
  }

  async compactions(sessionId: string): Promise<CompactionReceipt[]> {
    return (await this.store.read(sessionId)).receipts;
  }

  async delete(sessionId: string): Promise<void> {
    this.index.forget(sessionId);
    this.lastLabel.delete(quotedId(sessionId));
    await this.store.delete(sessionId);
  }
}
