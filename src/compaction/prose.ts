// What the user wrote, as opposed to what the user pasted. A user message is often a pasted log,
// stack trace, diff, JSON or code followed (or preceded) by a few sentences of the user's own: the
// rules of the task. Those sentences are what a summary must never lose, in whatever language and
// case the user writes them, whether or not they contain a word such as "never" or "must". So a
// line is judged by what it is, not by its words: its shape (indentation, how it starts and ends),
// the share of its tokens that are words rather than code (identifiers with underscores or inner
// capitals, operators, brackets, calls), and the patterns of machine output (timestamps, log levels,
// stack frames, diff headers, shell prompts, key: value data). A line that is neither clearly prose
// nor clearly code takes the kind of the lines around it: code only when code is on both sides.
// Every step is a single pass over the text, every pattern anchored and free of nested repetition,
// so the cost is linear in the text whatever it holds.

/** How a line reads. */
type Kind = 'prose' | 'code' | 'unsure' | 'blank';

/** Lines of machine output, recognized by how they start. */
const MACHINE_START: readonly RegExp[] = [
  /^\[?\d{4}[-/.]\d\d[-/.]\d\d(?:[T ,_]|$)/, // timestamps: 2026-11-24 10:00:01, [2026/11/24 ...
  /^\[?\d\d:\d\d:\d\d/, // 10:00:01.123
  /^\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|SEVERE|PANIC)\]?(?:[:\s\]]|$)/, // log levels
  /^at [^\s].{0,400}(?::\d{1,9}\)?|\(native\)|\(<anonymous>\))$/, // JS and Java stack frames
  /^File "[^"]{0,400}", line \d/, // Python frames
  /^Traceback \(most recent call last\)/,
  /^(?:Caused by|Exception in thread)\b/,
  /^\.\.\. \d+ more$/,
  /^[\w.$]{0,200}(?:Error|Exception|Panic)(?::|$| \[)/, // TypeError: ..., java.lang.NullPointerException
  /^(?:diff --git |index [0-9a-f]{6,}|--- a\/|\+\+\+ b\/|@@ -\d)/, // diffs
  /^(?:\$|>>>|#!|PS [A-Z]:\\)\s?\S/, // shell and REPL prompts, shebangs
  /^[\w.-]{1,80}@[\w.-]{1,80}:\S{0,200}[$#] /, // user@host:~/dir$ command
  /^(?:\/\/|\/\*|\*\/|<!--|-->)/, // comments of code
  /^<\/?[A-Za-z][\w:-]{0,40}(?:[\s>/]|$)/, // markup
  /^(?:[{}]|\[\s*$|\[[{"\d]|\],?$|"[^"]{0,200}"\s?:)/, // JSON, and code blocks' braces
  /^(?:import|export|from|const|let|var|function|def|class|public|private|package|#include|#define|using|namespace)\s+[\w{*"'<@]/, // declarations
  /^[\w.-]{1,80}\s?[=:]\s?[^\s]{0,200}(?<![.!?])$/, // key=value, key: value (one token of value)
  /^[\w.-]{1,80}:$/, // YAML section
  /^[|+][-=+|:\s]{3,}$/, // table rules
  /^[+-](?:[^\s\d+-]|(?: {2,}|\t)\S)/, // diff lines (a list item has one space after its dash)
  /^(?:FAIL|PASS|FAILED|PASSED|SKIPPED|ERR!)\s/, // test runners
  /^[✓✔✗✘×√]\s/u,
  /^(?:npm|yarn|pnpm) (?:ERR!|error|warn|WARN)(?:[\s:]|$)/,
  /^(?:SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|WITH) .{0,2000}\b(?:FROM|INTO|SET|TABLE|INDEX|AS|WHERE)\b/, // SQL
];

/** Tokens that are code in prose too: operators and lone brackets. */
const OPERATORS = new Set([
  '=',
  '==',
  '===',
  '!=',
  '!==',
  '=>',
  '->',
  '<-',
  '&&',
  '||',
  '{',
  '}',
  '};',
  '});',
  '(',
  ')',
  ');',
  '[',
  ']',
  '+=',
  '-=',
  '*=',
  '/=',
  '::',
  '<=',
  '>=',
  '<<',
  '>>',
  '|',
  '&',
  '%',
  '<',
  '>',
  '${',
  '#{',
]);

/** Punctuation around a word that does not make it code. */
const LEADING = new Set([...'([{"\'«“‘¿¡*_„‚<']);
const TRAILING = new Set([...'.,;:!?)]}"\'»”’…*_>']);

/** Scripts written without spaces between words: a token of them holds several words. */
const UNSPACED =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;

/** `token` without the punctuation around it (a loop: a regex anchored at the end is quadratic on long runs). */
function stripped(token: string): string {
  let a = 0;
  let b = token.length;
  while (a < b && LEADING.has(token[a] as string)) a++;
  while (b > a && TRAILING.has(token[b - 1] as string)) b--;
  return token.slice(a, b);
}

/** Words a token counts for (more than one in scripts without spaces); -1: code; 0: neither (numbers, paths, URLs, dashes, emoji). */
function tokenKind(token: string): number {
  if (OPERATORS.has(token)) return -1;
  // Inline code in a sentence (`getUser`) is part of the sentence, not a sign of pasted code.
  if (token.length > 1 && token.startsWith('`') && /`[.,;:!?)]*$/.test(token)) return 0;
  let core = stripped(token);
  if (core.length === 0) return 0;
  // Non-ASCII punctuation (CJK commas and full stops, Arabic commas...) belongs to prose.
  if (/[^ -~]/.test(core)) core = core.replace(/[\p{P}\p{S}]/gu, (c) => (c.charCodeAt(0) > 0x7f ? '' : c));
  if (core.length === 0) return 0;
  // Calls, indexing, assignments, generics, template and shell syntax.
  if (/[(){}[\]=;<>$`\\|^~]|::|->|&&/.test(core)) return -1;
  // No word of a spaced script is this long: a run of letters this long is data.
  if (core.length > 40 && !UNSPACED.test(core)) return 0;
  if (/^[\p{L}\p{M}][\p{L}\p{M}'’-]*$/u.test(core)) {
    if (UNSPACED.test(core)) return Math.max(1, Math.floor(core.length / 2));
    // camelCase from a lower-case start is an identifier; PascalCase (TypeScript, GitHub) is a name.
    return /^\p{Ll}+\p{Lu}/u.test(core) ? -1 : 1;
  }
  if (/^[\p{L}\p{M}\p{N}'’-]+$/u.test(core)) {
    // Letters with digits: a word (MP3, 2FA, 3rd) when short, data (hashes, ids) when long.
    return core.length <= 12 && /\p{L}/u.test(core) ? 1 : 0;
  }
  // snake_case and calls on a member read as code; paths, URLs, versions and numbers as neither.
  if (/^\w+_\w/.test(core) && !/[/.]/.test(core)) return -1;
  return 0;
}

/** A sentence's end: what makes a short line prose on its own. */
const SENTENCE_PUNCTUATION = /[.!?…。！？]$/u;

/** How one line reads, on its own. */
function lineKind(line: string): Kind {
  const trimmed = line.trim();
  if (trimmed.length === 0) return 'blank';
  for (const pattern of MACHINE_START) if (pattern.test(trimmed)) return 'code';
  // A block that opens at the end of the line or closes at its start.
  if (/(?:[{[(]|=>)$/.test(trimmed) || /^[}\])]/.test(trimmed)) return 'code';
  let words = 0;
  let code = 0;
  let tokens = 0;
  for (const token of trimmed.split(/\s+/)) {
    tokens++;
    const k = tokenKind(token);
    if (k > 0) words += k;
    else if (k < 0) code++;
  }
  if (code > 0 && code / tokens >= 0.4) return 'code';
  const indented = /^(?: {4}|\t)/.test(line) || /^[>|]/.test(trimmed);
  // Short lines without a sentence's end (`return total;`, `fix it`) and indented ones: their neighbors decide.
  if (!indented && words >= 2 && words >= 2 * code && (words >= 4 || SENTENCE_PUNCTUATION.test(trimmed)))
    return 'prose';
  if (!indented && words >= 1 && code === 0 && SENTENCE_PUNCTUATION.test(trimmed)) return 'prose';
  return 'unsure';
}

/** Where sentences end: after . ! ? followed by a space, and after CJK full stops. */
const SENTENCE_END = /(?<=[.!?…])\s+|(?<=[。！？])\s*/u;

/** Longest "sentence" kept as one: a line without punctuation longer than this is split at spaces. */
const MAX_SENTENCE_CHARS = 1_000;

function sentencesOf(line: string, out: string[]): void {
  for (const raw of line.trim().split(SENTENCE_END)) {
    let sentence = raw.trim();
    while (sentence.length > MAX_SENTENCE_CHARS) {
      const cut = sentence.lastIndexOf(' ', MAX_SENTENCE_CHARS);
      const at = cut > MAX_SENTENCE_CHARS / 2 ? cut : MAX_SENTENCE_CHARS;
      out.push(sentence.slice(0, at));
      sentence = sentence.slice(at).trim();
    }
    if (sentence.length > 0) out.push(sentence);
  }
}

/**
 * The sentences of `text` the user wrote (prose), verbatim and in order; pasted code, logs, stack
 * traces, diffs, JSON and data left out. Linear in the length of the text.
 */
export function proseSentences(text: string): string[] {
  return proseParagraphs(text).flat();
}

/**
 * {@link proseSentences} by paragraph (lines between blank lines): the prose sentences of each
 * paragraph that has any, in order.
 */
export function proseParagraphs(text: string): string[][] {
  // One loop per function: V8 compiles a long text's loop while it runs (on-stack replacement), and
  // code after that loop in the same function, not yet run when it was compiled, deoptimized on
  // every long text after (the compiled loop is kept and entered again).
  const lines = text.split(/\r?\n/);
  const kinds = lineKinds(lines);
  settleUnsure(kinds);
  return paragraphsOf(lines, kinds);
}

/** The kind of each line: fenced code blocks are code, the other lines as lineKind reads them. */
function lineKinds(lines: readonly string[]): Kind[] {
  const kinds: Kind[] = new Array(lines.length);
  let fenced = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (/^\s{0,3}(?:```|~~~)/.test(line)) {
      fenced = !fenced;
      kinds[i] = 'code';
      continue;
    }
    kinds[i] = fenced ? 'code' : lineKind(line);
  }
  return kinds;
}

/**
 * An unsure line is code when the nearest decided lines on both sides, within its paragraph, are
 * code (a short line inside a pasted block), and prose otherwise (a short reply after a log).
 */
function settleUnsure(kinds: Kind[]): void {
  const before = decidedBefore(kinds);
  let next: Kind = 'blank';
  for (let i = kinds.length - 1; i >= 0; i--) {
    const k = kinds[i] as Kind;
    if (k === 'blank') next = 'blank';
    if (k === 'unsure') kinds[i] = before[i] === 'code' && next === 'code' ? 'code' : 'prose';
    if (k === 'prose' || k === 'code') next = k;
  }
}

/** For each line, the kind of the nearest decided line before it in its paragraph ('blank': none). */
function decidedBefore(kinds: readonly Kind[]): Kind[] {
  const before: Kind[] = new Array(kinds.length);
  let last: Kind = 'blank';
  for (let i = 0; i < kinds.length; i++) {
    const k = kinds[i] as Kind;
    if (k === 'blank') last = 'blank';
    before[i] = last;
    if (k === 'prose' || k === 'code') last = k;
  }
  return before;
}

/** The prose sentences of each paragraph (lines between blank lines) that has any. */
function paragraphsOf(lines: readonly string[], kinds: readonly Kind[]): string[][] {
  const paragraphs: string[][] = [];
  let current: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (kinds[i] === 'blank' && current.length > 0) {
      paragraphs.push(current);
      current = [];
    }
    if (kinds[i] === 'prose') sentencesOf(lines[i] as string, current);
  }
  if (current.length > 0) paragraphs.push(current);
  return paragraphs;
}
