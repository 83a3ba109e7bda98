// guard.recall: the way back to what compaction took out of the prompt. By id, exactly (the
// tool-call id a placeholder names, an item id, a batch label); by query, ranked by a full-text
// index (MiniSearch: BM25 with prefix and fuzzy matching) built once per version of the session's
// archive. Answers are bounded: a recall result goes back into the prompt, so it must not be the
// thing that overflows it. A long item is cut around what the query matched, not blindly.
import MiniSearch from 'minisearch';
import { clipMiddle, formatCount, safeHead, safeTail } from '../compaction/text.ts';
import type { ArchivedItem, RecalledItem, RecallOptions, SessionArchive } from './types.ts';

export const DEFAULT_RECALL_LIMIT = 5;
export const MAX_RECALL_LIMIT = 50;

interface Located {
  item: ArchivedItem;
  header: string;
  /** Order of archiving: higher is newer. */
  order: number;
}

type Search = MiniSearch<{ id: number; text: string; toolName: string; label: string; role: string }>;

interface SearchIndex {
  version: string;
  items: Located[];
  /** Built on the first query: a lookup by id needs none. */
  search?: Search;
}

/** A version of the archive's content: which batches it holds (batches are immutable once written). */
const versionOf = (archive: SessionArchive): string =>
  `${archive.evicted}|${archive.batches.length}|${archive.batches.map((b) => b.label).join('\n')}`;

/** One full-text index per session, rebuilt only when the session's archive changed. */
export class RecallIndex {
  private readonly indexes = new Map<string, SearchIndex>();
  private readonly max: number;

  constructor(maxSessions: number) {
    this.max = Math.max(1, Math.min(maxSessions, 1_000));
  }

  forget(sessionId: string): void {
    this.indexes.delete(sessionId);
  }

  recall(sessionId: string, archive: SessionArchive, options: RecallOptions, defaultMaxChars: number): RecalledItem[] {
    const limit = clampInt(options.limit, DEFAULT_RECALL_LIMIT, 1, MAX_RECALL_LIMIT);
    const maxChars = clampInt(options.maxChars, defaultMaxChars, 200, Number.MAX_SAFE_INTEGER);
    const query = typeof options.query === 'string' ? options.query.trim() : '';
    const id = typeof options.id === 'string' ? options.id.trim() : '';
    if (!query && !id) return [];
    const index = this.indexOf(sessionId, archive);
    let found: Array<{ located: Located; score?: number; terms?: string[] }>;
    if (id) {
      // A batch in its own order; a reused tool-call id newest first (most likely the latest call).
      const byId = index.items
        .filter(({ item }) => item.id === id || item.toolCallId === id || item.label === id)
        .sort((a, b) => (a.item.label === id ? a.order - b.order : b.order - a.order));
      if (!query) found = byId.map((located) => ({ located }));
      else {
        const scores = new Map(searchOf(index).search(query).map((r) => [r.id as number, r]));
        found = byId
          .map((located) => {
            const r = scores.get(located.order);
            return { located, score: r?.score ?? 0, terms: r?.terms ?? [] };
          })
          .sort((a, b) => b.score - a.score);
      }
    } else {
      found = searchOf(index)
        .search(query)
        .map((r) => ({ located: index.items[r.id as number] as Located, score: r.score, terms: r.terms }));
    }
    return bounded(found.slice(0, limit), maxChars);
  }

  private indexOf(sessionId: string, archive: SessionArchive): SearchIndex {
    const version = versionOf(archive);
    const cached = this.indexes.get(sessionId);
    if (cached?.version === version) return cached;
    const items: Located[] = [];
    for (const batch of archive.batches)
      for (const item of batch.items) items.push({ item, header: batch.header, order: items.length });
    const index: SearchIndex = { version, items };
    this.indexes.delete(sessionId);
    this.indexes.set(sessionId, index);
    if (this.indexes.size > this.max) this.indexes.delete(this.indexes.keys().next().value as string);
    return index;
  }
}

function searchOf(index: SearchIndex): Search {
  if (index.search) return index.search;
  const search: Search = new MiniSearch({
    fields: ['text', 'toolName', 'label', 'role'],
    searchOptions: { prefix: true, fuzzy: 0.2, boost: { toolName: 2 } },
  });
  search.addAll(
    index.items.map(({ item }, i) => ({
      id: i,
      text: item.text,
      toolName: item.toolName ?? '',
      label: item.label,
      role: item.role,
    })),
  );
  index.search = search;
  return search;
}

function clampInt(value: unknown, fallback: number, min: number, max: number): number {
  const n = typeof value === 'number' && Number.isFinite(value) ? Math.floor(value) : fallback;
  return Math.min(max, Math.max(min, n));
}

/** The items with their text shared fairly within `maxChars`: short ones whole, long ones cut around their match. */
function bounded(found: Array<{ located: Located; score?: number; terms?: string[] }>, maxChars: number): RecalledItem[] {
  const share = new Map<number, number>();
  let left = maxChars;
  const bySize = found.map((f, i) => ({ i, chars: f.located.item.text.length })).sort((a, b) => a.chars - b.chars);
  bySize.forEach(({ i, chars }, k) => {
    const give = Math.min(chars, Math.floor(left / (bySize.length - k)));
    share.set(i, give);
    left -= give;
  });
  return found.map(({ located: { item, header }, score, terms }, i) => {
    const keep = share.get(i) ?? 0;
    const truncated = item.text.length > keep;
    return {
      ...item,
      text: truncated ? around(item.text, terms ?? [], keep) : item.text,
      header,
      chars: item.text.length,
      truncated,
      ...(score !== undefined ? { score } : {}),
    };
  });
}

/** About `max` characters of `text`: around the first place a matched term occurs, else its head and tail. */
function around(text: string, terms: readonly string[], max: number): string {
  const lower = text.toLowerCase();
  let at = -1;
  for (const term of terms) {
    if (term.length < 2) continue;
    const i = lower.indexOf(term.toLowerCase());
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  if (at < 0 || at < max / 2) return clipMiddle(text, max);
  // The match with a third of the room before it: what led to it, and more of what follows.
  const start = Math.max(0, Math.min(at - Math.floor(max / 3), text.length - max));
  const body = safeTail(safeHead(text, start + max), max);
  const before = start > 0 ? `[... ${formatCount(start)} characters before ...]\n` : '';
  const rest = text.length - start - body.length;
  const after = rest > 0 ? `\n[... ${formatCount(rest)} characters after ...]` : '';
  return `${before}${body}${after}`;
}
