// Secrets must not travel further than they have to. Conversations carry API keys pasted by users,
// tokens printed by tools, private keys read from disk; a summary would copy them into a store
// (Redis, say) and into every later prompt, and a hosted summarizer would receive them. So the text
// sent to the summarizer and the summaries written to the store pass through `redact`. The default
// masks well-known secret shapes; a user's function replaces it, `redact: false` turns it off.
//
// Every shape is found in time linear in the length of the text, whatever the text (the
// JWT pattern took 18 s on 200 KB and blocked the event loop). V8's regex engine backtracks: an
// attempt that runs over a long run of characters and then fails costs that run's length, and the
// engine retries from the next position. A pattern that may start at many positions inside one run
// (`\b` holds after every `-` of `eyJ-eyJ-…`) pays the run once per position: quadratic. So each
// shape below is one of:
//   - a regex whose attempts are bounded (fixed-length bodies, `{0,256}`), or that cannot fail
//     after a long scan (a run with no required ending: it matches, and the engine moves past it);
//   - a regex that may only start where a run starts (a lookbehind refuses every later position),
//     so each run is scanned by a constant number of attempts;
//   - a hand-written scan from a cheap anchor (a header, `://`, a word such as `password`) that
//     reads a bounded stretch back and resumes after whatever it read forward.
// bench/redaction.ts feeds each shape megabytes of its own worst case.
import type { GuardMessage } from '../messages.ts';
import { ruleSpans } from './secret-rules.ts';

/** A stretch of text to replace. */
interface Span {
  start: number;
  end: number;
  mask: string;
}

/** One secret shape: finds its occurrences, in order and without overlap. */
type Finder = (text: string) => Iterable<Span>;

const masked = (label: string): string => `[REDACTED:${label}]`;

/** `text` with `spans` (in order, disjoint) replaced by their masks. */
function replaceSpans(text: string, spans: Iterable<Span>): string {
  let out = '';
  let last = 0;
  let replaced = false;
  for (const span of spans) {
    out += text.slice(last, span.start) + span.mask;
    last = span.end;
    replaced = true;
  }
  return replaced ? out + text.slice(last) : text;
}

/** Every match of a global `pattern`, replaced by `mask` (by default the label alone). */
function regexFinder(
  label: string,
  pattern: RegExp,
  mask: (m: RegExpExecArray) => string = () => masked(label),
): Finder {
  return function* (text) {
    for (const m of text.matchAll(pattern)) yield { start: m.index, end: m.index + m[0].length, mask: mask(m) };
  };
}

// ---------------------------------------------------------------------------------------------
// Private keys (PEM and PGP armor). A header starts a key; the body runs over base64 lines and
// armor headers (`Proc-Type: …`, `Version: …`) up to the matching footer. A key whose footer is
// missing (a tool output clipped in the middle of the key) is masked as far as its body goes: the
// body of a key is the secret, with or without its last line; a header with no body is left as is.
// Newlines may be real or JSON-escaped (`"-----BEGIN PRIVATE KEY-----\nMIIE…"` in a service-account
// file). The header search resumes after each body, so every character is read once.

const KEY_HEADER = /-----BEGIN [A-Z0-9 ]{0,40}(?:PRIVATE|SECRET) KEY(?: BLOCK)?-----/g;
const KEY_FOOTER = /-----END [A-Z0-9 ]{0,40}(?:PRIVATE|SECRET) KEY(?: BLOCK)?-----/y;
const ARMOR_HEADER = /[A-Za-z][A-Za-z0-9-]{0,40}: [^\n\r\\]{0,400}/y;

function isBase64Char(code: number): boolean {
  return (
    (code >= 48 && code <= 57) ||
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    code === 43 ||
    code === 47 ||
    code === 61
  );
}

const isBlank = (code: number): boolean => code === 32 || code === 9;

/** Length of the line break at `i`: a real one, or `\n` escaped once or more (JSON in JSON); 0 if none. */
function lineBreakLength(text: string, i: number): number {
  const code = text.charCodeAt(i);
  if (code === 10 || code === 13) return 1;
  let j = i;
  while (text.charCodeAt(j) === 92) j++;
  return j > i && (text[j] === 'n' || text[j] === 'r') ? j + 1 - i : 0;
}

/** End of the armor header (`Proc-Type: 4,ENCRYPTED`, `Version: GnuPG`) at `i`, or -1. */
function armorHeaderEnd(text: string, i: number): number {
  ARMOR_HEADER.lastIndex = i;
  return ARMOR_HEADER.test(text) ? ARMOR_HEADER.lastIndex : -1;
}

/**
 * End of the key body that starts at `from`: past the footer when there is one. Without a footer,
 * past the last body line (base64, armor headers). Blanks inside a line (a key whose newlines became
 * spaces in an environment variable) count only when the footer follows: after a lone header they
 * are more likely prose.
 */
function keyBodyEnd(text: string, from: number): number {
  let i = from;
  let end = from;
  let strict = true;
  let lineStart = false;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    const lineBreak = lineBreakLength(text, i);
    if (lineBreak > 0) {
      i += lineBreak;
      lineStart = true;
    } else if (isBlank(code)) {
      let j = i;
      while (isBlank(text.charCodeAt(j))) j++;
      if (!lineStart && j < text.length && lineBreakLength(text, j) === 0) strict = false;
      i = j;
    } else if (code === 45) {
      KEY_FOOTER.lastIndex = i;
      return KEY_FOOTER.test(text) ? KEY_FOOTER.lastIndex : end;
    } else {
      const header = lineStart ? armorHeaderEnd(text, i) : -1;
      if (header < 0 && !isBase64Char(code)) break;
      i = header < 0 ? i + 1 : header;
      if (strict) end = i;
      lineStart = false;
    }
  }
  return end;
}

function* privateKeys(text: string): Iterable<Span> {
  KEY_HEADER.lastIndex = 0;
  for (let m = KEY_HEADER.exec(text); m !== null; m = KEY_HEADER.exec(text)) {
    const headerEnd = KEY_HEADER.lastIndex;
    const end = keyBodyEnd(text, headerEnd);
    // A header alone (`reading key -----BEGIN … KEY----- (truncated)`) hides nothing and says what was read.
    if (end > headerEnd) yield { start: m.index, end, mask: masked('private-key') };
    // The body was read once; the next header is searched after it.
    KEY_HEADER.lastIndex = end;
  }
}

// ---------------------------------------------------------------------------------------------
// Credentials in URLs: `scheme://user:password@host`, the user possibly empty (`redis://:pw@host`).
// A password may hold an unencoded `@` (the last one before the host counts, as parsers do). Found
// from each `://` (a plain string search): the scheme is read back at most 32 characters, the
// credentials forward at most 256 + 256.

/**
 * The mask of a URL's credentials has no colon: in `scheme://[REDACTED:x]@host` a URL parser, and a
 * secret scanner, would read `[REDACTED` as a user and `x]` as a password.
 */
const URL_CREDENTIALS_MASK = '[REDACTED-url-credentials]';
const USERINFO = /[^\s:/?#@"'<>`\\]{0,256}:[^\s/?#"'<>`\\]{1,256}@/y;
const isSchemeChar = (c: string | undefined): boolean => c !== undefined && /[A-Za-z0-9+.-]/.test(c);

function* urlCredentials(text: string): Iterable<Span> {
  for (let i = text.indexOf('://'); i >= 0; i = text.indexOf('://', i + 3)) {
    let start = i;
    while (start > i - 32 && isSchemeChar(text[start - 1])) start--;
    if (start === i || isSchemeChar(text[start - 1]) || !/[A-Za-z]/.test(text[start]!)) continue;
    USERINFO.lastIndex = i + 3;
    if (!USERINFO.test(text)) continue;
    yield { start, end: USERINFO.lastIndex, mask: `${text.slice(start, i + 3)}${URL_CREDENTIALS_MASK}@` };
    i = USERINFO.lastIndex - 3;
  }
}

// ---------------------------------------------------------------------------------------------
// Values assigned to a key that names a secret: `DB_PASSWORD=…`, `"client_secret": "…"`,
// `password: …` (YAML), `aws_secret_access_key = …` (INI), `--token …`. The key and the quotes stay
// (`DB_PASSWORD=[REDACTED:password]`), so a summary still says what was there. Code is not data:
// `password: string`, `const token = getToken()`, `password = user.password` are left alone.

/** A word secrets are named by, ending a key (`DB_PASSWORD`, `apiKey`, `client_secret`): where a candidate key ends. */
const SECRET_WORD = /(?:pass(?:word|wd|phrase)?|pwd|secret|token|key|key_base|auth|mnemonic|seed_phrase)(?![\w-])/gi;
/** After a key: its closing quote (when it opened one), blanks and the separator. */
const SEPARATOR = /([ \t]{0,16})(:=|=>|==|=|::|:)?/y;
const MAX_KEY = 64;
const isKeyChar = (c: string | undefined): boolean => c !== undefined && /[\w-]/.test(c);

/** A key and its separator, the value yet to read. */
interface Assignment {
  /** Where the key starts, its opening quote or dashes included. */
  start: number;
  key: string;
  /** The key was quoted (JSON, a Python dict): only a quoted value is data. */
  quotedKey: boolean;
  /** A command-line flag (`--token`), whose value may follow a blank alone. */
  flag: boolean;
  /** `=`, `:`, `:=`, `=>`, or '' after a flag. */
  separator: string;
  /** Blanks around the separator: `password = x` is code or INI, not an environment line. */
  spaced: boolean;
  /** Where the value may start. */
  next: number;
}

/**
 * The assignment whose key ends at `end`: a key of at most 64 characters, optionally quoted (`\"`
 * inside a JSON string included) or a command-line flag, then a separator. Undefined when there is
 * none (`==` and `::` are comparisons and scopes).
 */
function assignmentAt(text: string, end: number): Assignment | undefined {
  let start = end;
  while (start > end - MAX_KEY - 2 && isKeyChar(text[start - 1])) start--;
  if (isKeyChar(text[start - 1])) return undefined;
  const dashes = text[start] === '-' ? (text[start + 1] === '-' ? 2 : 1) : 0;
  const key = text.slice(start + dashes, end);
  if (!/^[A-Za-z_]/.test(key) || key.length > MAX_KEY) return undefined;
  const opening = dashes === 0 && (text[start - 1] === '"' || text[start - 1] === "'") ? text[start - 1]! : '';
  let quote = opening && text[start - 2] === '\\' ? `\\${opening}` : opening;
  // A quote that does not close after the key (or follows a word) is not the key's.
  if (quote && (isKeyChar(text[start - quote.length - 1]) || !text.startsWith(quote, end))) quote = '';
  SEPARATOR.lastIndex = end + quote.length;
  const [, blanks = '', separator = ''] = SEPARATOR.exec(text)!;
  const next = SEPARATOR.lastIndex;
  const flag = dashes > 0;
  if (separator === '==' || separator === '::' || (separator === '' && !(flag && blanks !== ''))) return undefined;
  const spaced = blanks !== '' || text[next] === ' ' || text[next] === '\t';
  return { start: start - quote.length, key, quotedKey: quote !== '', flag, separator, spaced, next };
}

/** What a key's value is called in the mask, by how the key ends (case and separators ignored). */
function secretKind(key: string): string | undefined {
  if (key === 'PWD' || key === 'OLDPWD') return undefined; // the shell's working directories
  const name = key.toLowerCase().replace(/[_-]/g, '');
  if (name.endsWith('secretaccesskey')) return 'aws-secret-key';
  if (/(?:password|passwd|passphrase|pwd)$/.test(name)) return 'password';
  // `DB_PASS`, `SMTP_PASS`, `pass`; not `BYPASS` or `COMPASS`.
  if (/(?:^|[_-])pass$/i.test(key)) return 'password';
  if (name.endsWith('secretkeybase') || name.endsWith('mnemonic') || name.endsWith('seedphrase')) return 'secret';
  // A bare `key` (`"key": "…"` in JSON) is a secret only when its value looks like one (see assignments).
  if (name === 'key') return 'key';
  if (name.endsWith('apikey')) return 'api-key';
  if (/(?:secret|secretkey|privatekey|encryptionkey|signingkey|masterkey)$/.test(name)) return 'secret';
  if (name.endsWith('token') || name === 'auth') return 'token';
  return undefined;
}

/** Words that follow a key in code or type declarations rather than a secret. */
const CODE_WORDS = new Set([
  'string',
  'number',
  'boolean',
  'bool',
  'str',
  'int',
  'float',
  'bytes',
  'any',
  'unknown',
  'object',
  'String',
  'Number',
  'Boolean',
  'Optional',
  'null',
  'undefined',
  'None',
  'nil',
  'true',
  'false',
  'True',
  'False',
  'await',
  'new',
  'this',
  'self',
  'function',
  'async',
  'yield',
  'typeof',
  'void',
  'required',
  'optional',
]);

const DOTTED_PATH = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
/** `${DB_PASSWORD}`, `$DB_PASSWORD`, `${{ secrets.X }}` at `start`: a reference to a secret, not the secret. */
function isReference(text: string, start: number, value: string): boolean {
  return text[start] === '$' && (text[start + 1] === '{' || /^\$[A-Z_][A-Z0-9_]*$/.test(value));
}
/** A token's alphabet (base64, base64url, hex, dotted JWT-like); `</s>` or `[PAD]` are not tokens. */
const TOKEN_LIKE = /^[\w.~+/=:-]{8,}$/;
/** Characters that end an unquoted value (Unicode blanks included). */
const VALUE_END = new Set(' \t\n\r\f\v\u00a0\u2028\u2029\ufeff"\'`,;&()[]{}<>|\\');
const MAX_QUOTED_VALUE = 4096;
/** A bare `key`'s value that is a secret: 16 or more characters of a token's alphabet (with letters and digits). */
const KEY_LIKE = /^[\w.~+/=-]{16,}$/;

/** Whether a line break (real, or an escaped `\n`) ends just before `i`. */
function lineBreakBefore(text: string, i: number): boolean {
  const c = text[i - 1];
  return c === '\n' || c === '\r' || ((c === 'n' || c === 'r') && text[i - 2] === '\\');
}

/**
 * Whether only indentation (or a YAML list dash) comes before the key at `i` on its line, the key
 * possibly under a dotted prefix (`spring.datasource.password`). Looks back at most 64 characters.
 */
function startsLine(text: string, i: number): boolean {
  const limit = Math.max(0, i - 64);
  let j = i;
  while (j > limit && /[\w.]/.test(text[j - 1]!) && !lineBreakBefore(text, j)) j--;
  while (j > limit && !lineBreakBefore(text, j) && ' \t-'.includes(text[j - 1]!)) j--;
  return j === 0 || lineBreakBefore(text, j);
}

/** Whether nothing but blanks or a comment follows `i` on its line. */
function endsLine(text: string, i: number): boolean {
  let j = i;
  while (text[j] === ' ' || text[j] === '\t') j++;
  return j >= text.length || lineBreakLength(text, j) > 0 || (j > i && text[j] === '#');
}

/**
 * End of the quoted string whose opening quote is `quote` and whose text starts at `from`; -1 when it does not close on
 * its line.
 */
function closingQuote(text: string, from: number, quote: string): number {
  const limit = Math.min(text.length, from + MAX_QUOTED_VALUE);
  for (let i = from; i < limit; i++) {
    const c = text[i];
    if (quote === '\\"' ? c === '\\' && text[i + 1] === '"' : c === quote) return i;
    if (c === '\n' || c === '\r') return -1;
    if (c === '\\' && quote !== '\\"') i++;
  }
  return -1;
}

/** Where the value at `from` starts and ends (inside its quotes), and where reading stopped. */
function readValue(text: string, from: number): { start: number; end: number; quoted: boolean; after: number } {
  let i = from;
  while (text[i] === ' ' || text[i] === '\t') i++;
  const quote = text[i] === '\\' && text[i + 1] === '"' ? '\\"' : text[i] === '"' || text[i] === "'" ? text[i]! : '';
  if (quote) {
    const start = i + quote.length;
    const close = closingQuote(text, start, quote);
    if (close >= 0) return { start, end: close, quoted: true, after: close + quote.length };
    return { start, end: start, quoted: true, after: start };
  }
  let end = i;
  while (end < text.length && !VALUE_END.has(text[end]!)) end++;
  return { start: i, end, quoted: false, after: end };
}

/** Whether the unquoted `value` after `a` is a literal secret rather than code, a type or prose. */
function isLiteral(text: string, a: Assignment, value: string, end: number): boolean {
  if (a.quotedKey || a.separator === '=>') return false;
  if (CODE_WORDS.has(value) || text[end] === '(') return false;
  // `password = user.password`; but `access_token=ya29.a0Af…` in a query string or an env file is a token.
  if (DOTTED_PATH.test(value) && (a.spaced || a.separator !== '=')) return false;
  // `password = pw;`, `password: hashed,`: an identifier ending a statement or a property is code;
  // `Password=hunter2;` (a connection string) is not.
  if (IDENTIFIER.test(value) && /^[ \t]*[;,)]/.test(text.slice(end, end + 17)) && (a.separator !== '=' || a.spaced))
    return false;
  if (a.flag && a.separator === '') return !value.startsWith('-');
  // `password: …` is YAML only as a line of its own; inside a sentence it is prose.
  if (a.separator === ':') return startsLine(text, a.start) && endsLine(text, end);
  return a.separator === '=' || a.separator === ':=';
}

/**
 * A seed phrase's value: quoted, as any value; unquoted, its words to the end of their line (at
 * most 1,024 characters: an unquoted value is otherwise read to its first blank, and the rest of
 * the phrase would stay).
 */
function readPhrase(text: string, from: number): { start: number; end: number; quoted: boolean; after: number } {
  let i = from;
  while (text[i] === ' ' || text[i] === '\t') i++;
  if (text[i] === '"' || text[i] === "'" || (text[i] === '\\' && text[i + 1] === '"')) return readValue(text, from);
  const end = phraseEnd(text, i);
  return { start: i, end, quoted: false, after: Math.max(end, i + 1) };
}

/** End of the words from `from` to the end of their line, at most 1,024 characters on. */
function phraseEnd(text: string, from: number): number {
  const limit = Math.min(text.length, from + 1_024);
  let end = from;
  for (let i = from; i < limit; i++) {
    const c = text[i];
    if (c === '\n' || c === '\r' || c === '"' || c === "'" || c === '#' || (c === '\\' && text[i + 1] === 'n')) break;
    if (c !== ' ' && c !== '\t') end = i + 1;
  }
  return end;
}

function* assignments(text: string): Iterable<Span> {
  SECRET_WORD.lastIndex = 0;
  while (SECRET_WORD.exec(text) !== null) {
    const a = assignmentAt(text, SECRET_WORD.lastIndex);
    const kind = a && secretKind(a.key);
    if (!a || !kind) continue;
    const v = /(?:mnemonic|seed_?phrase)$/i.test(a.key) ? readPhrase(text, a.next) : readValue(text, a.next);
    // The value was read once: the search resumes after it whether or not it is a secret.
    SECRET_WORD.lastIndex = Math.max(a.next, v.after);
    const value = text.slice(v.start, v.end);
    if (value === '' || value.startsWith('[REDACTED:') || isReference(text, v.start, value)) continue;
    if (kind === 'token' && !TOKEN_LIKE.test(value)) continue;
    // `"key": "user-settings"` names a key; `"key": "AbC123xYz789QwE456rTy0"` is one.
    if (kind === 'key' && !(KEY_LIKE.test(value) && /\d/.test(value) && /[A-Za-z]/.test(value))) continue;
    if (!v.quoted && !isLiteral(text, a, value, v.end)) continue;
    yield { start: v.start, end: v.end, mask: masked(kind) };
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP headers that carry a key (`-H "x-api-key: …"`, `X-Auth-Token: …`, `Ocp-Apim-Subscription-Key: …`)
// wherever they are written: a curl command, a log line, a string. An attempt starts at a literal
// name (the engine scans for it), only where a name starts (the lookbehind), and reads at most 512
// characters of value.

const SECRET_HEADER =
  /(?<![\w-])((?:x-|ocp-apim-|x-goog-)?(?:api-?key|auth-token|access-token|subscription-key|functions-key))[ \t]{0,8}:[ \t]{0,8}([A-Za-z0-9._~+/=-]{8,512})/dgi;

function* secretHeaders(text: string): Iterable<Span> {
  for (const m of text.matchAll(SECRET_HEADER)) {
    const [start, end] = m.indices?.[2] ?? [0, 0];
    if (end > start && !text.startsWith('[REDACTED:', start)) yield { start, end, mask: masked('api-key') };
  }
}

// ---------------------------------------------------------------------------------------------

/** Shapes of common secrets, in the order they are masked (a value already masked is left alone). */
const SECRET_SHAPES: ReadonlyArray<readonly [label: string, find: Finder]> = [
  ['private-key', privateKeys],
  // No required ending after the run: an attempt either matches the whole run or fails within 20
  // characters, and the engine moves past a match.
  ['anthropic-key', regexFinder('anthropic-key', /\bsk-ant-[A-Za-z0-9_-]{20,}/g)],
  ['openai-key', regexFinder('openai-key', /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g)],
  // Fixed lengths: every attempt is bounded.
  ['aws-access-key', regexFinder('aws-access-key', /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g)],
  // The run's alphabet holds no non-word character, so `\b` cannot hold inside it: one attempt a run.
  ['github-token', regexFinder('github-token', /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})\b/g)],
  ['slack-token', regexFinder('slack-token', /\bxox[abprs]-[A-Za-z0-9-]{10,}/g)],
  ['google-api-key', regexFinder('google-api-key', /\bAIza[0-9A-Za-z_-]{35}\b/g)],
  ['stripe-key', regexFinder('stripe-key', /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}/g)],
  // header.payload.signature, the signature possibly empty (`alg: none`). The segments must end
  // with a dot, so a failed attempt has scanned its run: only the run's first character may start one.
  ['jwt', regexFinder('jwt', /(?<![\w-])eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]*/g)],
  // `\s+` and the token's alphabet are disjoint, and the token has no required ending.
  [
    'bearer-token',
    regexFinder(
      'bearer-token',
      /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/-]{16,}=*/g,
      (m) => `${m[1]} ${masked('bearer-token')}`,
    ),
  ],
  // The formats of gitleaks' rules and a few it lacks (secret-rules.ts), masked by rule id.
  ['secret-rules', ruleSpans],
  ['secret-header', secretHeaders],
  ['url-credentials', urlCredentials],
  ['secret-assignment', assignments],
];

/** The labels of the default shapes, in the order they are applied (for benchmarks and docs). */
export const SECRET_SHAPE_LABELS: readonly string[] = SECRET_SHAPES.map(([label]) => label);

/**
 * The default redaction: masks API keys, tokens, JWTs, private keys, credentials in URLs and values
 * assigned to keys named like secrets (`DB_PASSWORD=…`, `"client_secret": "…"`). Linear in the
 * length of the text.
 */
export function redactSecrets(text: string): string {
  if (typeof text !== 'string' || text.length < 5) return text;
  let out = text;
  for (const [, find] of SECRET_SHAPES) out = replaceSpans(out, find(out));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Messages. Tool inputs and outputs are arbitrary values: shared subtrees, cycles, deep
// nesting. Each object is visited once; a cycle becomes a marker so the copy is a tree that
// serializes; media payloads (base64, bytes) are not text and are not scanned.

/** Part and content-item types whose payload is media, not text. */
const MEDIA_TYPES = new Set([
  'image',
  'file',
  'media',
  'image-data',
  'file-data',
  'image-url',
  'file-url',
  'image-file-id',
  'file-id',
  'image_url',
  'input_image',
  'input_file',
  'input_audio',
  'base64',
]);
/** Fields that hold a media payload (base64 or bytes); a URL in them is text like any other. */
const PAYLOAD_FIELDS = new Set(['data', 'image', 'file_data']);
const MEDIA_TYPE_FIELDS = ['mediaType', 'mimeType', 'media_type', 'mime_type'];
const MAX_DEPTH = 64;
const CIRCULAR = '[Circular]';
const TOO_DEEP = '[nested too deep]';
const UNREADABLE = '[unreadable]';
const IN_PROGRESS = Symbol('in progress');

type Redact = (text: string) => string;
type Memo = Map<object, unknown>;

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

const isMedia = (value: Record<string, unknown>): boolean =>
  (typeof value['type'] === 'string' && MEDIA_TYPES.has(value['type'])) ||
  MEDIA_TYPE_FIELDS.some((f) => typeof value[f] === 'string');

/** A base64 data URL: media, whatever field it is in. */
const isDataUrl = (text: string): boolean => text.startsWith('data:') && text.lastIndexOf(';base64,', 200) > 0;

/**
 * Base64 (or base64url) and nothing else, padding only at the end: a payload, not text. The
 * padding's group is the only way past the class, so a failed test backtracks once over the text.
 */
const BASE64_PAYLOAD = /^[A-Za-z0-9+/_\r\n-]*(?:={1,2}[\r\n]*)?$/;
const TEXT_MEDIA_TYPE = /^text\/|[/+](?:json|xml|yaml|x-yaml|javascript|x-sh|x-shellscript|toml|csv)\b/i;

/** Whether the string `value` in a payload field of `media` is an encoded payload that needs no scan. */
function isPayload(value: string, media: Record<string, unknown>): boolean {
  if (isDataUrl(value)) return true;
  if (/^https?:\/\//i.test(value)) return false;
  const mediaType = MEDIA_TYPE_FIELDS.map((f) => media[f]).find((t): t is string => typeof t === 'string');
  return !(mediaType && TEXT_MEDIA_TYPE.test(mediaType)) && BASE64_PAYLOAD.test(value);
}

/** `value` with every string passed through `redact`: the same reference when nothing changed. */
function redactValue(value: unknown, redact: Redact, memo: Memo, depth: number): unknown {
  if (typeof value === 'string') return isDataUrl(value) ? value : redact(value);
  if (typeof value !== 'object' || value === null) return value;
  if (memo.has(value)) {
    const done = memo.get(value);
    return done === IN_PROGRESS ? CIRCULAR : done;
  }
  if (depth >= MAX_DEPTH) return TOO_DEEP;
  const isArray = Array.isArray(value);
  // Bytes, URLs, dates and class instances are not JSON text.
  if (!isArray && !isPlainObject(value)) return value;
  memo.set(value, IN_PROGRESS);
  const result = isArray ? redactArray(value, redact, memo, depth) : redactRecord(value, redact, memo, depth);
  memo.set(value, result);
  return result;
}

function redactArray(value: unknown[], redact: Redact, memo: Memo, depth: number): unknown[] {
  let copy: unknown[] | undefined;
  for (let i = 0; i < value.length; i++) {
    const next = redactValue(value[i], redact, memo, depth + 1);
    if (next !== value[i]) (copy ??= [...value])[i] = next;
  }
  return copy ?? value;
}

/**
 * A record with its values redacted. In a media part, the payload is left alone (it is
 * not text, and scanning megabytes of base64 would stall the call); its name, URL and any text
 * payload are text.
 */
function redactRecord(value: Record<string, unknown>, redact: Redact, memo: Memo, depth: number) {
  const media = isMedia(value);
  let copy: Record<string, unknown> | undefined;
  for (const [key, v] of Object.entries(value)) {
    const payload = PAYLOAD_FIELDS.has(key) && typeof v === 'string' && isPayload(v, value);
    if (media && (key === 'providerOptions' || payload)) continue;
    const next = media && v instanceof URL ? redactUrl(v, redact) : redactValue(v, redact, memo, depth + 1);
    if (next !== v) (copy ??= { ...value })[key] = next;
  }
  return copy ?? value;
}

/** A URL's text redacted: the same URL object when nothing was masked. */
function redactUrl(url: URL, redact: Redact): unknown {
  const href = redact(url.href);
  return href === url.href ? url : href;
}

/** Fields of a part that reach the summarizer as text. */
const TEXT_FIELDS = ['text', 'input', 'output', 'value', 'reason'] as const;

/** `redactValue`, with what cannot be read (a getter or proxy that throws) replaced: unchecked, it is not sent. */
function redactSafely(value: unknown, redact: Redact, memo: Memo): unknown {
  try {
    return redactValue(value, redact, memo, 0);
  } catch {
    return UNREADABLE;
  }
}

function redactPart(part: unknown, redact: Redact, memo: Memo): unknown {
  if (!part || typeof part !== 'object' || !isPlainObject(part)) return part;
  if (isMedia(part)) return redactSafely(part, redact, memo);
  let copy: Record<string, unknown> | undefined;
  for (const field of TEXT_FIELDS) {
    if (!(field in part)) continue;
    const next = redactSafely(part[field], redact, memo);
    if (next !== part[field]) (copy ??= { ...part })[field] = next;
  }
  return copy ?? part;
}

/**
 * The message with its text, tool inputs and tool outputs redacted; the same object when nothing
 * needed masking. Media data is left alone (it is not text and reaches the summarizer as a label).
 * Cyclic tool inputs are copied with `[Circular]` in place of the cycle.
 */
export function redactMessage(message: GuardMessage, redact: (text: string) => string): GuardMessage {
  const content = (message as { content?: unknown } | null)?.content;
  if (typeof content === 'string') {
    const next = redact(content);
    return next === content ? message : ({ ...message, content: next } as GuardMessage);
  }
  if (!Array.isArray(content)) return message;
  const memo: Memo = new Map();
  let parts: unknown[] | undefined;
  for (let i = 0; i < content.length; i++) {
    const next = redactPart(content[i], redact, memo);
    if (next !== content[i]) (parts ??= [...content])[i] = next;
  }
  return parts ? ({ ...message, content: parts } as unknown as GuardMessage) : message;
}
