// guard.recall: the way back to what compaction took out of the prompt. By id, exactly (the
// tool-call id a placeholder names, an item id, a batch label); by query, ranked by a full-text
// index (MiniSearch: BM25, near spellings of plain words matched) kept up to date as the session's
// archive grows. The index is built in slices (a query indexes a bounded number of characters, the
// rest follows in the background): a query never waits for a whole archive to be indexed, and the
// items not indexed yet are searched for the query's words exactly. Answers are bounded: a recall
// result goes back into the prompt, so it must not be the thing that overflows it. A long item is
// cut around what the query matched, not blindly.
import { LRUCache } from 'lru-cache';
import { quotedId } from '../compaction/quoted-id.ts';
import MiniSearch from 'minisearch';
import { clipMiddle, formatCount, safeHead, safeTail } from '../compaction/text.ts';
import { originKeysOf } from './items.ts';
import type { ArchivedItem, RecalledItem, RecallOptions, SessionArchive } from './types.ts';

export const DEFAULT_RECALL_LIMIT = 5;
export const MAX_RECALL_LIMIT = 50;

interface Located {
  item: ArchivedItem;
  header: string;
  /** Order of archiving: higher is newer. */
  order: number;
  /** In the search index (else still to be indexed: searched by a scan for the query's words). */
  indexed?: boolean;
}

type Search = MiniSearch<{ id: number; text: string; toolName: string; label: string; role: string }>;

interface SearchIndex {
  version: string;
  /** The batches indexed, oldest first, with the ids of their items. */
  batches: Array<{ label: string; ids: number[] }>;
  /** Items by id; ids grow with the order of archiving (a Map keeps that order). */
  items: Map<number, Located>;
  nextId: number;
  /** Characters of the items' text: what the bound on all indexes counts. */
  chars: number;
  /** Made on the first query (a lookup by id needs none), and filled in slices. */
  search?: Search;
  /** Items not in the search index yet, oldest first (indexed newest first); ids of evicted items are skipped. */
  pending: number[];
  /** Characters of the pending items' text. */
  pendingChars: number;
  /** Items too large to index in one slice ({@link MAX_INDEXED_ITEM_CHARS}): every query scans them. */
  scanned: number[];
  /** A background slice is scheduled. */
  scheduled?: boolean;
}

/** A version of the archive's content: which batches it holds (batches are immutable once written). */
const versionOf = (archive: SessionArchive): string =>
  `${archive.evicted}|${archive.batches.length}|${archive.batches.map((b) => b.label).join('\n')}`;

/** Default of `archive.indexChars`: about 180 MB of heap (an index costs about 18 bytes a character). */
export const DEFAULT_INDEX_CHARS = 10_000_000;

/**
 * One full-text index per session, kept up to date as its archive changes: a compaction's new
 * batch is added to it, evicted batches are discarded, so a query after a compaction indexes what
 * that compaction archived, not the whole archive again. The indexes of all sessions together hold
 * at most `maxChars` characters of text (and at most `maxSessions` sessions): the least recently
 * recalled session's index is dropped beyond it, and rebuilt if that session recalls again.
 */
export class RecallIndex {
  private readonly indexes: LRUCache<string, SearchIndex>;
  private readonly maxSessions: number;
  private readonly fuzzyBudgetMs: number;

  constructor(maxSessions: number, fuzzyBudgetMs = FUZZY_BUDGET_MS, maxChars = DEFAULT_INDEX_CHARS) {
    // Bounded by characters in lru-cache and by sessions here: lru-cache's `max` would allocate
    // arrays for all 10,000 sessions when the guard is made (1.4 ms of every createContextGuard).
    this.indexes = new LRUCache<string, SearchIndex>({
      maxSize: Math.max(1, maxChars),
      sizeCalculation: (index) => Math.max(1, index.chars),
    });
    this.maxSessions = Math.max(1, Math.min(maxSessions, 10_000));
    this.fuzzyBudgetMs = fuzzyBudgetMs;
  }

  /** Characters of text indexed, all sessions together (for tests and benchmarks). */
  get chars(): number {
    return this.indexes.calculatedSize;
  }

  /** Sessions with an index (for tests and benchmarks). */
  get sessions(): number {
    return this.indexes.size;
  }

  forget(sessionId: string): void {
    this.indexes.delete(sessionId);
  }

  /** Characters of `sessionId`'s archive not indexed yet (for tests and benchmarks; 0 without an index). */
  pendingChars(sessionId: string): number {
    return this.indexes.peek(sessionId)?.pendingChars ?? 0;
  }

  recall(sessionId: string, archive: SessionArchive, options: RecallOptions, defaultMaxChars: number): RecalledItem[] {
    const limit = clampInt(options.limit, DEFAULT_RECALL_LIMIT, 1, MAX_RECALL_LIMIT);
    const maxChars = clampInt(options.maxChars, defaultMaxChars, 200, Number.MAX_SAFE_INTEGER);
    // A query is a few words: a model that pastes a whole output as its query gets its first
    // words searched, not an event loop held for each of thousands of fuzzy terms.
    const query = typeof options.query === 'string' ? clipQuery(options.query) : '';
    const id = typeof options.id === 'string' ? options.id.trim() : '';
    if (!query && !id) return [];
    const index = this.indexOf(sessionId, archive);
    // Only what the asking conversation itself holds, when it says which it is (a derived session).
    const owned = options.conversation !== undefined ? originKeysOf(options.conversation) : undefined;
    const mine = (located: Located) =>
      owned === undefined || (located.item.origin !== undefined && owned.has(located.item.origin));
    let found: Array<{ located: Located; score?: number; terms?: string[] }>;
    if (id) {
      // A batch in its own order; a reused tool-call id newest first (most likely the latest call).
      const byId = [...index.items.values()]
        .filter(
          ({ item }) =>
            item.id === id ||
            item.label === id ||
            (typeof item.toolCallId === 'string' && (item.toolCallId === id || quotedId(item.toolCallId) === id)),
        )
        .filter(mine)
        .sort((a, b) => (a.item.label === id ? a.order - b.order : b.order - a.order));
      if (!query) found = byId.map((located) => ({ located }));
      else {
        const scores = new Map(this.search(sessionId, index, query).map((r) => [r.id, r]));
        found = byId
          .map((located) => {
            const r = scores.get(located.order);
            return { located, score: r?.score ?? 0, terms: r?.terms ?? [] };
          })
          .sort((a, b) => b.score - a.score);
      }
    } else {
      found = this.search(sessionId, index, query)
        .map((r) => ({ located: index.items.get(r.id) as Located, score: r.score, terms: r.terms }))
        .filter(({ located }) => located !== undefined && mine(located));
    }
    const unique = withoutRepeats(found);
    const offset =
      typeof options.offset === 'number' && Number.isFinite(options.offset)
        ? Math.max(0, Math.floor(options.offset))
        : undefined;
    // Each matched term's frequency once per query (every long item weighs the same terms).
    const frequencies = new Map<string, number>();
    const frequency = (term: string) => {
      let n = frequencies.get(term);
      if (n === undefined) frequencies.set(term, (n = documentFrequency(index, term)));
      return n;
    };
    return bounded(unique.slice(0, limit), maxChars, frequency, offset);
  }

  /**
   * The query's matches: the index brought on by at most {@link QUERY_INDEX_CHARS} characters (a
   * small archive is indexed whole), then searched, and the items not indexed yet scanned for the
   * query's words; those are indexed in the background.
   */
  private search(sessionId: string, index: SearchIndex, query: string): Hit[] {
    indexPending(index, QUERY_INDEX_CHARS, 0);
    const hits = searchWithin(index, query, this.fuzzyBudgetMs);
    if (index.pendingChars === 0 && index.scanned.length === 0) return hits;
    if (index.pendingChars > 0) this.schedule(sessionId, index);
    return [...hits, ...scanPending(index, query, hits)].sort((a, b) => b.score - a.score);
  }

  /**
   * Indexes `index`'s pending items in slices of {@link SLICE_CHARS} characters, one per turn of the
   * event loop, while it is still the session's index (dropped by the bound, or replaced, it stops).
   */
  private schedule(sessionId: string, index: SearchIndex): void {
    if (index.scheduled) return;
    index.scheduled = true;
    const slice = () => {
      index.scheduled = false;
      if (this.indexes.peek(sessionId) !== index || index.pendingChars === 0) return;
      indexPending(index, SLICE_CHARS, 1);
      if (index.pendingChars > 0) this.schedule(sessionId, index);
    };
    const timer = setTimeout(slice, 0) as { unref?: () => void };
    // A slice left to run never keeps a process alive.
    timer.unref?.();
  }

  private indexOf(sessionId: string, archive: SessionArchive): SearchIndex {
    const version = versionOf(archive);
    const cached = this.indexes.get(sessionId);
    if (cached?.version === version) return cached;
    const index = (cached && advanced(cached, archive, version)) ?? built(archive, version);
    // Set again: its size changed. An index larger than the whole bound is not kept (built per query).
    this.indexes.set(sessionId, index);
    while (this.indexes.size > this.maxSessions) this.indexes.pop(); // the least recently recalled
    return index;
  }
}

/**
 * Characters a query indexes before it searches, at most: an archive this small is indexed whole by
 * its first query (about 7 ms). Indexing costs about 0.75 ms of CPU per 1,000 characters: a
 * session's first query on a 2M-character archive took 1.5 s when it built the whole index at once.
 */
export const QUERY_INDEX_CHARS = 10_000;
/** Characters indexed per background slice, at most (and at least one item): one turn of the event loop each. */
export const SLICE_CHARS = 10_000;
/**
 * An item larger than this is never indexed (it would hold one slice for about 25 ms per 32,000
 * characters, 0.75 s for a 1M-character output): every query scans it for its words instead, exactly
 * (no near spellings), at about 7 ms per 1M characters.
 */
export const MAX_INDEXED_ITEM_CHARS = 32_000;

/** Adds `batch`'s items to `index`, pending: indexed by the next query or in the background. */
function addBatch(index: SearchIndex, batch: SessionArchive['batches'][number]): void {
  const ids: number[] = [];
  for (const item of batch.items) {
    const located = { item, header: batch.header, order: index.nextId++ };
    const chars = typeof item.text === 'string' ? item.text.length : 0;
    index.items.set(located.order, located);
    index.chars += chars;
    if (chars > MAX_INDEXED_ITEM_CHARS) index.scanned.push(located.order);
    else {
      index.pending.push(located.order);
      index.pendingChars += chars;
    }
    ids.push(located.order);
  }
  index.batches.push({ label: batch.label, ids });
}

/** Indexes pending items, newest first, up to `maxChars` characters (and at least `minItems` items). */
function indexPending(index: SearchIndex, maxChars: number, minItems: number): void {
  const search = searchOf(index);
  let done = 0;
  let items = 0;
  while (index.pending.length > 0) {
    const located = index.items.get(index.pending.at(-1) as number);
    const chars = located && typeof located.item.text === 'string' ? located.item.text.length : 0;
    if (located && !located.indexed && items >= minItems && done + chars > maxChars) break;
    index.pending.pop();
    if (!located || located.indexed) continue;
    search.add(documentOf(located));
    located.indexed = true;
    index.pendingChars -= chars;
    done += chars;
    items++;
  }
  if (index.pending.length === 0) index.pendingChars = 0;
}

function built(archive: SessionArchive, version: string): SearchIndex {
  const index: SearchIndex = {
    version,
    batches: [],
    items: new Map(),
    nextId: 0,
    chars: 0,
    pending: [],
    pendingChars: 0,
    scanned: [],
  };
  for (const batch of archive.batches) addBatch(index, batch);
  return index;
}

/**
 * `index` brought to `archive` when the archive is the indexed one with its oldest batches evicted
 * and new ones appended (how archives change); undefined otherwise (then it is built anew).
 */
function advanced(index: SearchIndex, archive: SessionArchive, version: string): SearchIndex | undefined {
  const labels = archive.batches.map((b) => b.label);
  const first = labels.length > 0 ? index.batches.findIndex((b) => b.label === labels[0]) : index.batches.length;
  if (first < 0) return undefined;
  const kept = index.batches.slice(first);
  if (kept.length > labels.length || kept.some((b, i) => b.label !== labels[i])) return undefined;
  for (const gone of index.batches.slice(0, first)) {
    for (const id of gone.ids) {
      const located = index.items.get(id);
      if (!located) continue;
      index.items.delete(id);
      const chars = typeof located.item.text === 'string' ? located.item.text.length : 0;
      index.chars -= chars;
      if (located.indexed) index.search?.discard(id);
      else index.pendingChars -= chars;
    }
  }
  if (tooDirty(index.search)) return undefined;
  index.batches = kept;
  if (first > 0) index.scanned = index.scanned.filter((id) => index.items.has(id));
  for (const batch of archive.batches.slice(kept.length)) addBatch(index, batch);
  index.version = version;
  return index;
}

/** Discarded documents an index may hold before it is rebuilt, at least (their terms stay until then). */
const MIN_DIRT = 50;

/**
 * Whether an index holds more discarded documents than live ones (and at least {@link MIN_DIRT}):
 * it is then rebuilt in slices like a new one, so the dead terms it carries never outweigh the
 * live ones, and a session that evicts one batch per compaction rebuilds rarely.
 */
const tooDirty = (search: Search | undefined): boolean =>
  search !== undefined && search.dirtCount > Math.max(MIN_DIRT, search.documentCount);

const documentOf = ({ item, order }: Located) => ({
  id: order,
  text: item.text,
  toolName: item.toolName ?? '',
  label: item.label,
  role: item.role,
});

/** A term that names something exactly: it holds a digit or a separator. */
const IDENTIFIER = /[\d_./\\-]/;

function searchOf(index: SearchIndex): Search {
  if (index.search) return index.search;
  const search: Search = new MiniSearch({
    fields: ['text', 'toolName', 'label', 'role'],
    // No prefix expansion: `in` would match `invoice` and `ledger` every `ledger3fa`, burying the
    // item that holds the exact word under look-alikes (measured in bench/survival). Near spellings
    // still match for plain words, never for identifiers (digits, `_`, `-`, `.`, `/`): `ORD-448213`
    // must not find `ORD-448218`, nor `invoice_9f3a` a look-alike repeated in every grep output.
    searchOptions: { fuzzy: fuzzyOf, maxFuzzy: MAX_FUZZY_EDITS, boost: { toolName: 2 } },
    tokenize,
    // Never its own timers: MiniSearch 7.2's auto-vacuum walks the term tree on timers while
    // background slices add documents, and a TypeError it throws there is an unhandled rejection
    // that ends the host's process (lucaong/minisearch#306). Discarded documents are dropped by
    // rebuilding the index instead ({@link tooDirty}).
    autoVacuum: false,
  });
  index.search = search;
  return search;
}

/**
 * Near spellings: a fifth of a plain word's letters (one edit from five letters, two from eight),
 * never for identifiers, nor for words under five letters (one edit of `ord` walks a large part of
 * the term tree and matches `and`, `old`, `odd`...).
 */
const MAX_FUZZY_EDITS = 2;
const fuzzyOf = (term: string): number | false => (term.length < 5 || IDENTIFIER.test(term) ? false : 0.2);

/**
 * Milliseconds of one query spent on near spellings. Exact terms cost microseconds each; a fuzzy
 * one walks the index's term tree within its edit distance, milliseconds on a large archive (32
 * long words took 4 s). The query's terms are searched one by one, in order, each fuzzily
 * while this budget lasts and exactly once it is spent: the words the model wrote first get near
 * spellings, and no query holds the event loop for long.
 */
export const FUZZY_BUDGET_MS = 5;

interface Hit {
  id: number;
  score: number;
  terms: string[];
}

/**
 * The query's matches, as MiniSearch's own OR query would rank them (each document's scores of
 * the query terms it matched added, times the number of those terms), with fuzzy matching bounded
 * by {@link FUZZY_BUDGET_MS}.
 */
function searchWithin(index: SearchIndex, query: string, budgetMs: number): Hit[] {
  const search = searchOf(index);
  // As MiniSearch splits the query: a word and its parts (a part repeated counts again, as there).
  const terms = tokenize(query).map((t) => t.toLowerCase());
  const byId = new Map<number, { score: number; queryTerms: Set<string>; terms: Set<string> }>();
  const start = performance.now();
  const seen = new Map<string, ReturnType<Search['search']>>();
  for (const term of terms) {
    let results = seen.get(term);
    if (!results) {
      const fuzzy = performance.now() - start < budgetMs ? fuzzyOf(term) : false;
      results = search.search(term, { fuzzy, tokenize: single });
      seen.set(term, results);
    }
    for (const r of results) {
      const id = r.id as number;
      let hit = byId.get(id);
      if (!hit) byId.set(id, (hit = { score: 0, queryTerms: new Set(), terms: new Set() }));
      hit.score += r.score;
      hit.queryTerms.add(term);
      for (const t of r.terms) hit.terms.add(t);
    }
  }
  return [...byId]
    .map(([id, h]) => ({ id, score: h.score * h.queryTerms.size, terms: [...h.terms] }))
    .sort((a, b) => b.score - a.score);
}

const single = (term: string): string[] => [term];

/** MiniSearch's BM25+ parameters (its defaults), and the field boosts of the search. */
const BM25 = { k: 1.2, b: 0.7, d: 0.5 };
const SHORT_FIELDS = [
  ['toolName', 2],
  ['label', 1],
  ['role', 1],
] as const;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/**
 * Terms a scan looks for, at most: the time of one expression over 2M characters grows with its
 * terms (16: about 10 ms; 140, a pasted output's 32 words and their parts: about 45 ms).
 */
export const MAX_SCAN_TERMS = 16;
/**
 * Characters of items not indexed yet a query scans, at most (the default `archive.maxChars`: a
 * default archive is scanned whole, in about 15 ms). Of a larger one, the newest items are scanned;
 * the others are found once the background has indexed them.
 */
export const SCAN_MAX_CHARS = 2_000_000;

/** The query's terms a scan looks for: its words as written first, then their parts, lower-cased. */
function scanTerms(query: string): string[] {
  const all = [...new Set(tokenize(query).map((t) => t.toLowerCase()))];
  const words = new Set(wordsOf(query).map((w) => w.toLowerCase()));
  return [...all.filter((t) => words.has(t)), ...all.filter((t) => !words.has(t))]
    .slice(0, MAX_SCAN_TERMS)
    .sort((a, b) => b.length - a.length);
}
const escapeRegExp = (term: string): string => term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The items not indexed yet that hold the query's words exactly (no near spellings), scored as the
 * search scores its matches (BM25+ with the whole archive's document count, an item's length
 * against the average item's; the tool name boosted as there). One pass of one expression of at
 * most {@link MAX_SCAN_TERMS} terms over each item's lower-cased text, newest first, at most
 * {@link SCAN_MAX_CHARS} characters: about 15 ms for 2M. A term counts where it starts and ends at a
 * word's edge, as the index's words and their parts do (`ord-448213`, `ord`, `448213`).
 */
function scanPending(index: SearchIndex, query: string, indexedHits: readonly Hit[]): Hit[] {
  const terms = scanTerms(query);
  if (terms.length === 0) return [];
  // Over the lower-cased text, as the index lower-cases its terms (`İ` lowers to two characters).
  const pattern = new RegExp(terms.map(escapeRegExp).join('|'), 'g');
  // The terms by their first character, longest first: what can start where the expression matched.
  const byFirst = new Map<string, string[]>();
  for (const term of terms) {
    const first = term[0] as string;
    byFirst.set(first, [...(byFirst.get(first) ?? []), term]);
  }
  let budget = SCAN_MAX_CHARS;
  /** Per item, each term's frequency in each field it is in (boost, frequency, length ratio). */
  const found: Array<{ id: number; matches: Array<{ term: string; tf: number; boost: number; ratio: number }> }> = [];
  const df = new Map<string, number>();
  const average = index.chars / Math.max(1, index.items.size);
  // Newest first, as they are indexed.
  const ids = [...index.pending, ...index.scanned].sort((a, b) => b - a);
  for (const id of ids) {
    const located = index.items.get(id);
    if (!located || located.indexed) continue;
    const { item } = located;
    const text = typeof item.text === 'string' ? item.text.toLowerCase() : '';
    if (text.length > budget) break;
    budget -= text.length;
    const tf = new Map<string, number>();
    pattern.lastIndex = 0;
    for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
      const at = m.index;
      pattern.lastIndex = at + 1;
      if (LETTER_OR_DIGIT.test(text[at - 1] ?? ' ')) continue;
      // Every query term that starts here and ends at a word's edge (`ord-448213` and `ord`).
      const found = m[0];
      for (const term of byFirst.get(found[0] as string) ?? []) {
        if (term.length > found.length || !found.startsWith(term)) continue;
        if (!LETTER_OR_DIGIT.test(text[at + term.length] ?? ' ')) tf.set(term, (tf.get(term) ?? 0) + 1);
      }
    }
    const ratio = text.length / Math.max(1, average);
    const matches = [...tf].map(([term, n]) => ({ term, tf: n, boost: 1, ratio }));
    for (const [field, boost] of SHORT_FIELDS) {
      const value = item[field];
      if (typeof value !== 'string' || value === '') continue;
      const words = tokenize(value).map((t) => t.toLowerCase());
      for (const term of terms) {
        const n = words.filter((w) => w === term).length;
        if (n > 0) matches.push({ term, tf: n, boost, ratio: 1 });
      }
    }
    if (matches.length === 0) continue;
    for (const term of new Set(matches.map((m) => m.term))) df.set(term, (df.get(term) ?? 0) + 1);
    found.push({ id, matches });
  }
  if (found.length === 0) return [];
  // Items of the whole archive holding each term: the indexed ones the search found, and these.
  for (const hit of indexedHits) for (const t of hit.terms) if (df.has(t)) df.set(t, (df.get(t) ?? 0) + 1);
  const total = index.items.size;
  const idf = (term: string) => {
    const n = df.get(term) ?? 0;
    return Math.log(1 + (total - n + 0.5) / (n + 0.5));
  };
  return found.map(({ id, matches }) => {
    let score = 0;
    for (const { term, tf, boost, ratio } of matches)
      score += boost * idf(term) * (BM25.d + (tf * (BM25.k + 1)) / (tf + BM25.k * (1 - BM25.b + BM25.b * ratio)));
    const matched = [...new Set(matches.map((m) => m.term))];
    return { id, score: score * matched.length, terms: matched };
  });
}

/** Most characters and distinct terms of a query that are searched. */
const MAX_QUERY_CHARS = 1_000;
const MAX_QUERY_TERMS = 32;

function clipQuery(query: string): string {
  const terms = [...new Set(tokenize(query.slice(0, MAX_QUERY_CHARS)))];
  return terms.slice(0, MAX_QUERY_TERMS).join(' ').trim();
}

function clampInt(value: unknown, fallback: number, min: number, max: number): number {
  const n = typeof value === 'number' && Number.isFinite(value) ? Math.floor(value) : fallback;
  return Math.min(max, Math.max(min, n));
}

/** Characters that end a word (a path, an identifier and a dotted name stay one word). */
const WORD_BREAK = /[\s"'`()[\]{}<>,;:!?=|*&^%$#@~+]+/u;
const isEdge = (ch: string) => ch === '.' || ch === '_' || ch === '-' || ch === '/' || ch === '\\';

/**
 * Words as written (`src/billing/invoice_9f3a.ts`, `ORD-448213`) and their parts at each level:
 * path segments (`invoice_9f3a.ts`), dotted pieces (`invoice_9f3a`), and the words joined by `_`
 * or `-` (`invoice`, `9f3a`). A query that names an identifier whole matches it exactly, the
 * rarest term of all, and one that names a part still matches. Linear: splits, no backtracking.
 */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  const add = (parts: string[], word: string) => {
    for (const part of parts) if (part && part !== word) out.push(part);
  };
  for (const word of wordsOf(text)) {
    out.push(word);
    for (const segment of word.split(/[/\\]+/)) {
      if (segment !== word) out.push(segment);
      for (const piece of segment.split('.')) {
        if (piece !== segment) out.push(piece);
        add(piece.split(/[_-]+/), piece);
      }
    }
  }
  return out.filter((t) => t.length > 0);
}

/** The words of `text` as written, without the separators at their edges (`src/a.ts`, `ORD-448213`). */
function wordsOf(text: string): string[] {
  const words: string[] = [];
  for (const raw of text.split(WORD_BREAK)) {
    let a = 0;
    let b = raw.length;
    while (a < b && isEdge(raw[a] as string)) a++;
    while (b > a && isEdge(raw[b - 1] as string)) b--;
    if (a < b) words.push(raw.slice(a, b));
  }
  return words;
}

/** How many archived items hold `term` as a word (what makes a matched term worth centring a cut on). */
function documentFrequency(index: SearchIndex, term: string): number {
  return searchOf(index).search(term, { fuzzy: false, prefix: false, tokenize: (t) => [t] }).length;
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
        ? around(item.text, weighted(terms ?? [], frequency), keep)
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

/** Matched terms weighed by rarity in the archive: a term in every item says nothing about where to look. */
function weighted(
  terms: readonly string[],
  frequency: (term: string) => number,
): Array<{ term: string; weight: number }> {
  return terms
    .filter((t) => t.length >= 2)
    .map((term) => ({ term: term.toLowerCase(), weight: 1 / (1 + frequency(term)) }));
}

/** Occurrences looked at per term: enough to find where terms meet, bounded on huge texts. */
const MAX_OCCURRENCES = 200;

/**
 * About `max` characters of `text`: the stretch where the matched terms weigh most together (the
 * rarest ones, ideally side by side; a common word such as `error` early in the text would centre
 * the cut on the wrong place), else its head and tail.
 */
function around(text: string, terms: ReadonlyArray<{ term: string; weight: number }>, max: number): string {
  const { lower, at } = lowerCased(text);
  const hits: Array<{ at: number; end: number; k: number }> = [];
  terms.forEach(({ term }, k) => {
    for (let i = lower.indexOf(term), n = 0; i >= 0 && n < MAX_OCCURRENCES; i = lower.indexOf(term, i + 1), n++)
      hits.push({ at: at(i), end: at(i + term.length - 1) + 1, k });
  });
  if (hits.length === 0) return clipMiddle(text, max);
  hits.sort((a, b) => a.at - b.at);
  // Two pointers over the hits: the span of two thirds of the room whose distinct terms weigh most.
  const span = Math.max(1, Math.floor((2 * max) / 3));
  const count = new Array<number>(terms.length).fill(0);
  let score = 0;
  let best = -1;
  let bestAt = 0;
  /** Where the last match of the best stretch ends. */
  let bestEnd = 0;
  for (let lo = 0, hi = 0; lo < hits.length; lo++) {
    while (hi < hits.length && (hits[hi] as { at: number }).at < (hits[lo] as { at: number }).at + span) {
      const k = (hits[hi] as { k: number }).k;
      count[k] = (count[k] ?? 0) + 1;
      if (count[k] === 1) score += (terms[k] as { weight: number }).weight;
      hi++;
    }
    if (score > best) {
      best = score;
      bestAt = (hits[lo] as { at: number }).at;
      bestEnd = (hits[hi - 1] as { end: number }).end;
    }
    const k = (hits[lo] as { k: number }).k;
    count[k] = (count[k] ?? 1) - 1;
    if (count[k] === 0) score -= (terms[k] as { weight: number }).weight;
  }
  // What follows a match is what it says (a term starts its sentence): a sixth of the room after the
  // stretch's last match, as after a stretch read from a sixth of the room before it.
  const after = Math.floor(max / 6);
  if (bestEnd + after <= max && text.length > max) return windowAt(text, 0, max);
  return windowAt(text, Math.max(0, Math.min(bestAt - after, text.length - max)), max);
}

/**
 * `text` in lower case (as the search lower-cases its terms), with where each of its characters is
 * in `text`: a few characters lower to longer ones (`İ` to `i̇`), which moves every position after
 * them.
 */
function lowerCased(text: string): { lower: string; at: (position: number) => number } {
  const lower = text.toLowerCase();
  if (lower.length === text.length) return { lower, at: (position) => position };
  const origin = new Int32Array(lower.length + 1);
  let j = 0;
  for (let i = 0; i < text.length && j < lower.length; i++) {
    const code = text.charCodeAt(i);
    // A pair is lowered whole (its two halves apart would stay as they are).
    const pair = code >= 0xd800 && code <= 0xdbff && i + 1 < text.length;
    const lowered = (pair ? text.slice(i, i + 2) : (text[i] ?? '')).toLowerCase().length;
    for (let n = 0; n < lowered && j < lower.length; n++) origin[j++] = i;
    if (pair) i++;
  }
  for (; j <= lower.length; j++) origin[j] = text.length;
  return { lower, at: (position) => origin[position] ?? text.length };
}

/** `max` characters of `text` from `start`, with markers saying how much is before and after (and how to read on). */
function windowAt(text: string, start: number, max: number): string {
  const body = safeTail(safeHead(text, start + max), Math.min(max, text.length - start));
  const before = start > 0 ? `[... ${formatCount(start)} characters before ...]\n` : '';
  const rest = text.length - start - body.length;
  const after =
    rest > 0
      ? `\n[... ${formatCount(rest)} characters after: recall with offset ${start + body.length} to read on ...]`
      : '';
  return `${before}${body}${after}`;
}
