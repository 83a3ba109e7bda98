// The public shapes of lossless compaction: what the archive keeps of every message a compaction
// took out of the prompt, what `guard.recall` returns, and the receipt of each compaction.
import type { CompactionReason, CompactionStep } from '../compaction/contract.ts';
import type { GuardMessage } from '../messages.ts';

/** Who wrote an archived item: the conversation's roles, or the guard (a clip-archive batch summary). */
export type ArchivedRole = 'user' | 'assistant' | 'tool' | 'summary';

/** How a compaction took a message (or one tool result) out of the prompt. */
export type ReplacementKind = 'summarized' | 'placeholder' | 'truncated' | 'clipped' | 'media';

/** One archived original: a message, or one tool result of a tool message. */
export interface ArchivedItem {
  /**
   * The tool-call id for a tool result (what its placeholder names); otherwise `{label}#{n}`.
   * Tool-call ids are not always unique (some models reuse `call_0`): recall by id returns every match.
   */
  id: string;
  /** The batch it was archived in: `compaction-batch-{sessionId}-{end ISO}`. */
  label: string;
  role: ArchivedRole;
  /** A readable rendering of the original: its text, tool calls as `name(input)`, media as labels. */
  text: string;
  toolCallId?: string;
  toolName?: string;
  /** Its position in the host's history when it was archived. */
  position: number;
  /** How the compaction replaced it. */
  replaced: ReplacementKind;
  /**
   * A truncated tool output: where in `text` the prompt's copy is cut (its head ends). A recall by
   * id starts there, with the part the prompt lacks.
   */
  cutAt?: number;
  /**
   * A key of the original's content as the host wrote it (before redaction): what recall's
   * `conversation` option compares, to return only what the asking conversation itself holds.
   */
  origin?: string;
}

/** What `guard.recall` returns: the item, its batch's header, and whether its text was shortened to fit. */
export interface RecalledItem extends ArchivedItem {
  /** The batch's metadata header, `[depth:N|start:ISO|end:ISO|count:M]`. */
  header: string;
  /** Characters of the archived text; `text` is shorter when `truncated`. */
  chars: number;
  truncated: boolean;
  /** Where `text` starts in the archived text (0 unless an `offset` was asked for or a truncated output's middle is returned). */
  offset: number;
  /** Relevance of a query match (higher is better); absent for a lookup by id. */
  score?: number;
}

export interface RecallOptions {
  /** Full-text query, ranked by relevance (terms, prefixes and near spellings match). */
  query?: string;
  /** An exact tool-call id, item id or batch label. With `query`, the matches are ranked by it. */
  id?: string;
  /** Most items returned. Default 5, at most 50. */
  limit?: number;
  /** Most characters of text returned in all (long items are cut around what matched). Default: the `archive.recallMaxChars` option. */
  maxChars?: number;
  /**
   * Read each item's text from this character on (paging through a long output found by id).
   * Without it, a truncated tool output recalled by id starts where the prompt's copy of it is cut.
   */
  offset?: number;
  /**
   * The asking conversation's messages, as the host holds them (the originals, before any
   * compaction): only items archived from one of these very messages are returned. A session id
   * derived from a conversation's start is the same for every conversation that starts alike (two
   * customers who both open with "hi"); with this option one of them never reads what compaction
   * archived from the other. The adapters' recall tools pass it for derived sessions.
   */
  conversation?: readonly GuardMessage[];
}

/** One archived batch: what one compaction (or one clip-archive re-summarization) took out of the prompt. */
export interface ArchiveBatch {
  label: string;
  /** 0 for a compaction's originals; a re-summarized clip-archive batch is one deeper than what it merged. */
  depth: number;
  /** When the messages it holds arrived: from the previous batch's end (or the session's start) to the compaction. */
  start: string;
  end: string;
  /** `[depth:N|start:ISO|end:ISO|count:M]`. */
  header: string;
  items: ArchivedItem[];
  /** Characters of its items' text: what the archive bound counts. */
  chars: number;
}

/** A message (or tool result) a compaction took out of the prompt. */
export interface ReplacedMessage {
  position: number;
  role: 'user' | 'assistant' | 'tool';
  toolCallId?: string;
  replaced: ReplacementKind;
}

/** What one compaction did, kept per session (`guard.compactions`) and sent with `compaction-end`. */
export interface CompactionReceipt {
  /** When it ran (ISO 8601). */
  at: string;
  reason: CompactionReason;
  strategy: CompactionStep;
  steps: CompactionStep[];
  tokensBefore: number;
  tokensAfter: number;
  /** What it took out of the prompt, by position in the host's history and tool-call id. */
  replaced: ReplacedMessage[];
  /** Labels of the archive batches holding the originals (none when the archive is off). */
  archive: string[];
  /** The summary it wrote, when it wrote one. */
  summary?: string;
}

/** A session's archive as stored: one value per session, beside its state, in the same store. */
export interface SessionArchive {
  version: 1;
  batches: ArchiveBatch[];
  /** The most recent receipts, oldest first. */
  receipts: CompactionReceipt[];
  /** Batches evicted so far (the archive bound). */
  evicted: number;
}
