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
    const unique = withoutRepeats(found);
    const offset =
      typeof options.offset === 'number' && Number.isFinite(options.offset) ? Math.max(0, Math.floor(options.offset)) : undefined;
    return bounded(unique.slice(0, limit), maxChars, (term) => documentFrequency(index, term), offset);
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
    // No prefix expansion: `in` would match `invoice` and `ledger` every `ledger3fa`, burying the
    // item that holds the exact word under look-alikes (measured in bench/survival). Near spellings
    // still match (fuzzy).
    searchOptions: { fuzzy: 0.2, boost: { toolName: 2 } },
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

/** How many archived items hold `term` (what makes a matched term worth centring a cut on). */
function documentFrequency(index: SearchIndex, term: string): number {
  return searchOf(index).search(term, { fuzzy: false, prefix: false }).length;
}

/**
 * The same original archived twice (a tool output truncated by one compaction, replaced by a
 * placeholder in the next) is returned once, its newest copy's place kept.
 */
function withoutRepeats<T extends { located: Located }>(found: T[]): T[] {
  const seen = new Set<string>();
  return found.filter(({ located: { item } }) => {
    const key = `${item.id}\u0000${item.position}\u0000${item.text.length}\u0000${item.text.slice(0, 200)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The items with their text shared fairly within `maxChars`: short ones whole, long ones cut around their match. */
function bounded(
  found: Array<{ located: Located; score?: number; terms?: string[] }>,
  maxChars: number,
  frequency: (term: string) => number,
  offset: number | undefined,
): RecalledItem[] {
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
    // Where to read from: the offset asked for; for a truncated output found by id that does not
    // fit whole, where the prompt's copy is cut (the part the model lacks); else around the match,
    // or head and tail.
    const cut = terms === undefined && item.cutAt !== undefined && item.text.length > keep ? item.cutAt : undefined;
    const start = offset ?? cut;
    const sliced = start !== undefined && (start > 0 || item.text.length > keep);
    const text = sliced
      ? windowAt(item.text, Math.min(start, item.text.length), keep)
      : item.text.length > keep
        ? around(item.text, rarestFirst(terms ?? [], frequency), keep)
        : item.text;
    return {
      ...item,
      text,
      header,
      chars: item.text.length,
      truncated: text.length !== item.text.length || sliced,
      offset: sliced ? Math.min(start, item.text.length) : 0,
      ...(score !== undefined ? { score } : {}),
    };
  });
}

/** Matched terms, the rarest in the archive first: the one that singles this item out. */
function rarestFirst(terms: readonly string[], frequency: (term: string) => number): string[] {
  return terms
    .filter((t) => t.length >= 2)
    .map((t) => ({ t, n: frequency(t) }))
    .sort((a, b) => a.n - b.n || b.t.length - a.t.length)
    .map(({ t }) => t);
}

/**
 * About `max` characters of `text`: around where the rarest matched term occurs (a common word
 * such as `error` would centre the cut on the wrong place), else its head and tail.
 */
function around(text: string, terms: readonly string[], max: number): string {
  const lower = text.toLowerCase();
  let at = -1;
  for (const term of terms) {
    at = lower.indexOf(term.toLowerCase());
    if (at >= 0) break;
  }
  if (at < 0 || at < max / 2) return clipMiddle(text, max);
  // The match with a third of the room before it: what led to it, and more of what follows.
  return windowAt(text, Math.max(0, Math.min(at - Math.floor(max / 3), text.length - max)), max);
}

/** `max` characters of `text` from `start`, with markers saying how much is before and after (and how to read on). */
function windowAt(text: string, start: number, max: number): string {
  const body = safeTail(safeHead(text, start + max), Math.min(max, text.length - start));
  const before = start > 0 ? `[... ${formatCount(start)} characters before ...]\n` : '';
  const rest = text.length - start - body.length;
  const after =
    rest > 0 ? `\n[... ${formatCount(rest)} characters after: recall with offset ${start + body.length} to read on ...]` : '';
  return `${before}${body}${after}`;
}
