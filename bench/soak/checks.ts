// The soak's invariants on the user's words, as pure functions of what was sent and what came back
// (bench/soak.ts calls them on every beforeModel output and counts what they report). Each one
// errs on the side of silence: a false violation costs every engineer who reads the report.
import type { GuardMessage, ToolResultPart } from '../../src/index.ts';
// The digest's own normalization (inline binary labelled, whitespace collapsed), so that what the
// soak expects to find is spelled as the digest spells it.
import { stripInlineBinary, toolOutputText } from '../../src/compaction/text.ts';
import { isMedia, isMessage } from './hostile.ts';

/** Index of the latest user message of a history (junk entries skipped), -1 when there is none. */
export function latestUserIndex(history: readonly unknown[]): number {
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i];
    if (isMessage(m) && m.role === 'user') return i;
  }
  return -1;
}

/** The non-blank text parts of a user message (its string content, or each text part). */
export function userTextParts(m: GuardMessage): string[] {
  if (m.role !== 'user') return [];
  if (typeof m.content === 'string') return m.content.trim() ? [m.content] : [];
  if (!Array.isArray(m.content)) return [];
  return m.content.flatMap((p) => (p?.type === 'text' && typeof p.text === 'string' && p.text.trim() ? [p.text] : []));
}

/** All text of a user message, parts joined by a line break. */
function userTextOf(m: unknown): string {
  if (!isMessage(m) || m.role !== 'user') return '';
  if (typeof m.content === 'string') return m.content;
  if (!Array.isArray(m.content)) return '';
  return m.content.map((p) => (p?.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('\n');
}

function mediaOf(m: GuardMessage): unknown[] {
  return m.role === 'user' && Array.isArray(m.content) ? m.content.filter(isMedia) : [];
}

const payload = (part: unknown) =>
  (part as { image?: unknown; data?: unknown }).image ?? (part as { data?: unknown }).data;

export interface LatestOutcome {
  /** Every text part of the latest user message is verbatim in one user message of the output. */
  whole: boolean;
  media: number;
  /** Of its images and files, those not in the output (replaced by a placeholder, or dropped). */
  missingMedia: number;
}

/**
 * Whether the latest user message reached the model whole: the same message, or a user message
 * (a copy with media replaced, a continuation that quotes it) holding every one of its text parts
 * verbatim. Media are counted apart: the same part, or a part with the same payload, is kept.
 */
export function latestOutcome(latest: GuardMessage, out: readonly unknown[]): LatestOutcome {
  const media = mediaOf(latest);
  if (out.includes(latest)) return { whole: true, media: media.length, missingMedia: 0 };
  const parts = userTextParts(latest);
  const users = out.filter((m): m is GuardMessage => isMessage(m) && m.role === 'user');
  const whole =
    parts.length === 0 ||
    users.some((m) => {
      const text = userTextOf(m);
      return parts.every((p) => text.includes(p));
    });
  const sent = users.flatMap(mediaOf);
  const missingMedia = media.filter(
    (p) => !sent.some((q) => q === p || (payload(q) !== undefined && payload(q) === payload(p))),
  ).length;
  return { whole, media: media.length, missingMedia };
}

/**
 * `text` as a digest line spells it: inline binary labelled, whitespace collapsed. The sizes in the
 * labels are left out: the soak labels a message's first 20,000 characters, the digest all of them.
 */
export function collapse(text: string): string {
  return stripInlineBinary(text)
    .replace(/\[((?:base64 )?data: [^\]]*?)[\d,]+ characters\]/g, '[$1# characters]')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The first `n` UTF-16 units, one fewer when the cut would split a surrogate pair. */
export function head(text: string, n: number): string {
  if (text.length <= n) return text;
  const code = text.charCodeAt(n - 1);
  return code >= 0xd800 && code <= 0xdbff ? text.slice(0, n - 1) : text.slice(0, n);
}

/** Characters of a user message's start the digest must keep (whitespace collapsed). */
export const DIGEST_START_CHARS = 60;
/**
 * Redaction sees this much of a message's start (a secret that starts in the first 60 characters ends well within it).
 */
const REDACTION_WINDOW_CHARS = 20_000;

/**
 * The start of a user message as a digest of it would spell it: its first text, redacted as the
 * guard redacts what it digests, inline binary labelled, whitespace collapsed; '' when blank.
 * `raw` leaves the redaction out (the digest of the overflow path was not redacted).
 */
export function startOf(m: GuardMessage, redact: (text: string) => string, chars: number, raw = false): string {
  const first = userTextParts(m)[0] ?? '';
  const clipped = first.slice(0, REDACTION_WINDOW_CHARS);
  return head(collapse(raw ? clipped : redact(clipped)), chars);
}

/**
 * The start as the digest spells it: the guard cuts each entry first and redacts the whole digest
 * after, so a mask shorter than a secret in the first characters leaves the line shorter than a
 * redact-then-cut start.
 */
export function digestStartOf(
  m: GuardMessage,
  redact: (text: string) => string,
  entryChars: number | undefined,
): string {
  const first = userTextParts(m)[0] ?? '';
  return head(collapse(redact(head(collapse(first), entryChars ?? DIGEST_START_CHARS))), DIGEST_START_CHARS);
}

/** Length of the longest prefix of `needle` found in `haystack` (inclusion is monotonic in the prefix). */
export function longestIncludedPrefix(haystack: string, needle: string): number {
  let lo = 0;
  let hi = needle.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (haystack.includes(needle.slice(0, mid))) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Units a digest may lose at its cut: a split surrogate pair, the ellipsis, a collapsed space. */
const DIGEST_CUT_SLACK = 4;

/** Characters a digest keeps of each entry, read from its header ("each cut to its first 200 characters"). */
export function digestEntryChars(digest: string): number | undefined {
  const m = /first ([\d,]+) characters/.exec(digest.slice(0, 400));
  return m ? Number(m[1]!.replace(/,/g, '')) : undefined;
}

/**
 * Whether the start of a user message survives in `haystack` (the digest and the output's user
 * texts): the first DIGEST_START_CHARS characters, or the first N when the digest says it cuts
 * every entry to N, less a few units for the cut itself.
 */
export function startSurvives(start: string, haystack: string, entryChars: number | undefined): boolean {
  const want = Math.min(start.length, DIGEST_START_CHARS, entryChars ?? Number.POSITIVE_INFINITY);
  return longestIncludedPrefix(haystack, start) >= Math.max(1, want - DIGEST_CUT_SLACK);
}

/** The output's user texts joined (the summary, continuations, kept and clipped messages). */
export function userTextsOf(out: readonly unknown[]): string {
  return out
    .map(userTextOf)
    .filter((t) => t)
    .join('\n');
}

const REMOVED = /^\[Output of tool [\s\S]* removed to save context/;

function resultsById(messages: readonly unknown[]): Map<string, ToolResultPart[]> {
  const byId = new Map<string, ToolResultPart[]>();
  for (const m of messages) {
    if (!isMessage(m) || (m.role !== 'tool' && m.role !== 'assistant') || !Array.isArray(m.content)) continue;
    for (const p of m.content as unknown[]) {
      const part = p as ToolResultPart;
      if (part?.type !== 'tool-result') continue;
      const list = byId.get(part.toolCallId) ?? [];
      list.push(part);
      byId.set(part.toolCallId, list);
    }
  }
  return byId;
}

/** Whether an output is text only (no image or file a placeholder may legitimately replace). */
function textOnly(part: ToolResultPart): boolean {
  const o = part.output as { type?: unknown; value?: unknown } | undefined;
  return (
    o?.type !== 'content' || (Array.isArray(o.value) && o.value.every((i: { type?: unknown }) => i?.type === 'text'))
  );
}

/**
 * Tool results shown as a removal placeholder although their own output is shorter than the
 * placeholder (removing it saves nothing, so no compaction step would choose to): an edit meant for
 * another result with the same tool call id. A placeholder names the size of the output it stands
 * for (written from the part it replaces); with reused ids that size tells which result it is (the
 * output need not keep the newest ones: the latest tool step stays while a newer entry of the same
 * id may have been left out as invalid). Otherwise (no size named, or none of the id's results has
 * it) results of one id are matched by position from the end.
 */
export function misplacedPlaceholders(sent: readonly unknown[], out: readonly unknown[]): string[] {
  const problems: string[] = [];
  const originals = resultsById(sent);
  for (const [id, shown] of resultsById(out)) {
    const mine = originals.get(id) ?? [];
    shown.forEach((part, k) => {
      const value = (part.output as { value?: unknown } | undefined)?.value;
      if (typeof value !== 'string' || !REMOVED.test(value)) return;
      const named = /removed to save context \(([\d,]+) characters/.exec(value)?.[1];
      const namedSize = named === undefined ? undefined : Number(named.replace(/,/g, ''));
      const original =
        (namedSize !== undefined && mine.length > shown.length
          ? mine.find((o) => textOnly(o) && toolOutputText(o.output).text.length === namedSize)
          : undefined) ?? mine[mine.length - shown.length + k];
      if (!original || !textOnly(original)) return;
      const size = toolOutputText(original.output).text.length;
      if (size < value.length) {
        const shared = mine.length > 1 ? ` (${mine.length} results share the id)` : '';
        problems.push(
          `result ${k + 1} of ${shown.length} with id ${id} (its own output ${size} characters) is sent as "${value.slice(0, 80)}…"${shared}`,
        );
      }
    });
  }
  return problems;
}
