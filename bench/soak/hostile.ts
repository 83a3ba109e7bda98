// The hostile classes of the soak: what an ordinary but unlucky agent sends a guard.
// Arbitraries and builders only; the invariants that judge the guard's answers are in checks.ts.
// Everything here is a pure function of its arguments, so `--only` regenerates the same input.
import fc from 'fast-check';
import { Buffer } from 'node:buffer';
import type { GuardMessage } from '../../src/index.ts';
import { png } from '../../test/png.ts';

// ---------------------------------------------------------------------------------------------
// Usage outliers
// ---------------------------------------------------------------------------------------------

/**
 * Counts no request of the soak could cost (windows are at most 1M tokens): a provider or adapter
 * bug. Each must be ignored (`usage-ignored`) and never recorded. `low` (1 for a large prompt) is
 * used only when the prompt's text alone is at least LOW_OUTLIER_MIN_TOKENS; `cache-infinity` sums
 * two finite cache counts to Infinity; `output` is a normal input count with an absurd output count.
 */
export const OUTLIERS = ['1e12', '1e308', '2^53+10', 'cache-infinity', 'max-value', 'low', '1e9', 'output'] as const;
export type Outlier = (typeof OUTLIERS)[number];
export const outlierArb: fc.Arbitrary<Outlier> = fc.constantFrom(...OUTLIERS);

/** Chars/4 tokens of text a prompt needs before a count of 1 is absurd for it (2000× too low). */
export const LOW_OUTLIER_MIN_TOKENS = 2_000;

/** The usage reported for an outlier (`normal` is what the fake provider would have billed). */
export function outlierUsage(kind: Outlier, normal: number, textTokens: number): Record<string, number> {
  switch (kind) {
    case '1e12':
      return { inputTokens: 1e12 };
    case '1e308':
      return { inputTokens: 1e308 };
    case '2^53+10':
      return { inputTokens: 2 ** 53 + 10 };
    case 'cache-infinity':
      return { inputTokens: normal, cacheReadInputTokens: 1e308, cacheWriteInputTokens: 1e308 };
    case 'max-value':
      return { inputTokens: Number.MAX_VALUE };
    case 'low':
      return textTokens >= LOW_OUTLIER_MIN_TOKENS ? { inputTokens: 1 } : { inputTokens: 1e12 };
    case '1e9':
      return { inputTokens: 1e9 + (normal % 997) };
    case 'output':
      return { inputTokens: normal, outputTokens: 1e12 };
  }
}

/** Whether a `usage-recorded` event took in an outlier's count (what must never happen). */
export function recordedOutlier(kind: Outlier, event: { inputTokens: number; outputTokens?: number }): boolean {
  if (kind === 'output') return event.outputTokens !== undefined && !(event.outputTokens < 1e9);
  if (kind === 'low') return event.inputTokens <= 1;
  return !(event.inputTokens < 1e9);
}

// ---------------------------------------------------------------------------------------------
// Invalid entries and cyclic values
// ---------------------------------------------------------------------------------------------

/** Entries a host's buggy history holds: `null`, non-objects, role-less and unknown-role objects. */
export const JUNK = [
  'null',
  'undefined',
  'number',
  'string',
  'array',
  'role-less',
  'unknown-role',
  'empty-object',
] as const;
export type Junk = (typeof JUNK)[number];
export const junkArb = fc.record({ kind: fc.constantFrom(...JUNK), afterUser: fc.boolean() });

export function junkEntry(kind: Junk, label: string): unknown {
  switch (kind) {
    case 'null':
      return null;
    case 'undefined':
      return undefined;
    case 'number':
      return 42;
    case 'string':
      return `stray string entry ${label}`;
    case 'array':
      return [{ role: 'user', content: `nested ${label}` }];
    case 'role-less':
      return { content: `a message without a role ${label}` };
    case 'unknown-role':
      return { role: 'narrator', content: `an unknown role ${label}` };
    case 'empty-object':
      return {};
  }
}

/** Where a tool call or its result holds a reference cycle. */
export const CYCLES = ['input-self', 'input-nested', 'input-array', 'output-json'] as const;
export type Cycle = (typeof CYCLES)[number];

/** A tool input with a cycle (a host that stored a parsed object graph instead of JSON). */
export function cyclicInput(kind: Cycle, base: Record<string, unknown>): Record<string, unknown> {
  const input: Record<string, unknown> = { ...base };
  if (kind === 'input-nested') input['meta'] = { owner: input, depth: 2 };
  else if (kind === 'input-array') {
    const list: unknown[] = [1, 2];
    list.push(list);
    input['list'] = list;
  } else input['self'] = input;
  return input;
}

export function cyclicJson(): Record<string, unknown> {
  const value: Record<string, unknown> = { ok: true, rows: [1, 2, 3] };
  value['parent'] = { child: value };
  return value;
}

/** Whether a value holds a reference cycle (walked with a stack of the objects on the current path). */
export function hasCycle(value: unknown, path = new Set<object>(), depth = 0): boolean {
  if (!value || typeof value !== 'object' || ArrayBuffer.isView(value) || depth > 200) return false;
  if (path.has(value)) return true;
  path.add(value);
  try {
    for (const v of Object.values(value)) if (hasCycle(v, path, depth + 1)) return true;
    return false;
  } finally {
    path.delete(value);
  }
}

/** Why an entry of a prompt cannot be sent, or undefined when it is a message a provider accepts. */
export function invalidEntry(entry: unknown): string | undefined {
  if (entry === null || typeof entry !== 'object') return entry === null ? 'null' : typeof entry;
  if (Array.isArray(entry)) return 'array';
  if (!isMessage(entry)) {
    const role = (entry as { role?: unknown }).role;
    return role === undefined ? 'no role' : `role ${String(role)}`;
  }
  if (hasCycle(entry)) return 'cyclic content';
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Marker-like user text
// ---------------------------------------------------------------------------------------------

/** The guard's own markers, as a user may type or paste them. */
export const MARKERS = ['[Continue]', '[Context Summary]', '[End of Context Summary]', '[Mechanical digest:'] as const;
export const markerArb = fc.record({
  marker: fc.constantFrom(...MARKERS),
  /** `space`/`newline`: the marker then the text; `framed`: a pasted summary, opened and closed. */
  form: fc.constantFrom('space' as const, 'newline' as const, 'framed' as const),
});
export type MarkerSpec = typeof markerArb extends fc.Arbitrary<infer T> ? T : never;

export function withMarker(spec: MarkerSpec, text: string): string {
  if (spec.form === 'framed') return `${spec.marker}\n${text}\n[End of Context Summary]`;
  return `${spec.marker}${spec.form === 'space' ? ' ' : '\n'}${text}`;
}

// ---------------------------------------------------------------------------------------------
// Media in a user message
// ---------------------------------------------------------------------------------------------

export const mediaArb = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('pngs' as const),
      count: fc.integer({ min: 2, max: 10 }),
      /** Large screenshots (1000-2000 px a side, by 100: a few shapes, each built once). */
      side: fc.integer({ min: 10, max: 20 }).map((k) => k * 100),
      encoding: fc.constantFrom('base64' as const, 'bytes' as const, 'data-url' as const),
      /** Bytes of pseudo-random image data (the base64 a provider receives). */
      padding: fc.constantFrom(2_000, 40_000, 300_000),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('pdf' as const),
      megabytes: fc.integer({ min: 1, max: 4 }),
      encoding: fc.constantFrom('base64' as const, 'bytes' as const, 'data-url' as const),
      named: fc.boolean(),
    }),
  },
);
export type MediaSpec = typeof mediaArb extends fc.Arbitrary<infer T> ? T : never;

// Large blobs are built once per shape: conversations share them (the guard must not mutate them;
// the soak's input snapshots would see it).
const blobs = new Map<string, Buffer>();
function cached(key: string, make: () => Buffer): Buffer {
  let b = blobs.get(key);
  if (!b) {
    b = make();
    blobs.set(key, b);
  }
  return b;
}

/** A PDF of `megabytes` MB without a readable page count (the guard falls back to its size). */
function pdf(megabytes: number): Buffer {
  return cached(`pdf:${megabytes}`, () => {
    // Pseudo-random bytes (compressed streams look like that), one 64 KB block repeated.
    const block = Buffer.alloc(65_536);
    for (let i = 0, x = 2_024; i < block.length; i++) {
      x = (x * 1103515245 + 12345) >>> 0;
      block[i] = x >>> 24;
    }
    const body = Buffer.alloc(megabytes * 1_000_000, block);
    const open = Buffer.from(
      '%PDF-1.7\n%\u00e2\u00e3\u00cf\u00d3\n1 0 obj\n<< /Type /Catalog >>\nendobj\nstream\n',
      'latin1',
    );
    return Buffer.concat([open, body, Buffer.from('\nendstream\n%%EOF\n', 'latin1')]);
  });
}

const base64Of = new WeakMap<Buffer, string>();

type MediaPart =
  | { type: 'image'; image: string | Uint8Array; mediaType: string }
  | { type: 'file'; data: string | Uint8Array; mediaType: string; filename?: string };

export function mediaParts(spec: MediaSpec): MediaPart[] {
  const encode = (bytes: Buffer, mediaType: string): string | Uint8Array => {
    if (spec.encoding === 'bytes') return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let base64 = base64Of.get(bytes);
    if (base64 === undefined) {
      base64 = bytes.toString('base64');
      base64Of.set(bytes, base64);
    }
    return spec.encoding === 'data-url' ? `data:${mediaType};base64,${base64}` : base64;
  };
  if (spec.kind === 'pdf') {
    const part: MediaPart = {
      type: 'file',
      data: encode(pdf(spec.megabytes), 'application/pdf'),
      mediaType: 'application/pdf',
    };
    if (spec.named) part.filename = `quarterly-report-${spec.megabytes}MB.pdf`;
    return [part];
  }
  return Array.from({ length: spec.count }, (_, k) => {
    const side = spec.side + k;
    const bytes = cached(`png:${side}:${spec.padding}`, () => png(side, spec.side, spec.padding));
    return { type: 'image' as const, image: encode(bytes, 'image/png'), mediaType: 'image/png' };
  });
}

/** Whether a part is an image or a file (what a placeholder may replace). */
export function isMedia(part: unknown): boolean {
  const type = (part as { type?: unknown } | null)?.type;
  return type === 'image' || type === 'file';
}

// ---------------------------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------------------------

/**
 * Secrets the default redaction must mask, each written complete: every
 * `expression` is what a redaction pattern sees whole, `value` the part that must not survive.
 * Only complete expressions count as leaks, so a secret cut by a clip (its tail gone) is not one.
 */
export const PLANTED_SECRETS: ReadonlyArray<{ name: string; expression: string; value: string }> = [
  {
    name: 'openai-key',
    expression: 'sk-proj-abcdefghijklmnopqrstuvwxyz0123',
    value: 'sk-proj-abcdefghijklmnopqrstuvwxyz0123',
  },
  { name: 'aws-access-key', expression: ' AKIAABCDEFGHIJKLMNOP,', value: 'AKIAABCDEFGHIJKLMNOP' },
  { name: 'bearer', expression: 'Bearer abcdefghijklmnopqrstuvwx0123;', value: 'abcdefghijklmnopqrstuvwx0123' },
  {
    name: 'aws-secret',
    expression: 'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n',
    value: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  },
  { name: 'redis-url', expression: 'redis://:Sup3rRedisPassw0rd@cache.internal:6379/0', value: 'Sup3rRedisPassw0rd' },
  { name: 'env-password', expression: 'DB_PASSWORD=Sup3rDbPassw0rdValue\n', value: 'Sup3rDbPassw0rdValue' },
  { name: 'json-password', expression: '"password": "Sup3rJsonPassw0rd"', value: 'Sup3rJsonPassw0rd' },
  {
    name: 'url-credentials',
    expression: 'https://deploy:Sup3rDeployPassw0rd@git.example.com/repo.git',
    value: 'Sup3rDeployPassw0rd',
  },
  {
    name: 'unsigned-jwt',
    expression: 'eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhZG1pbiIsInJvbGUiOiJyb290In0. ',
    value: 'eyJzdWIiOiJhZG1pbiIsInJvbGUiOiJyb290In0',
  },
  {
    name: 'pgp-private-key',
    expression:
      '-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXsoakPGPbodyQ29udGV4dEd1YXJk\n=Xk3p\n-----END PGP PRIVATE KEY BLOCK-----',
    value: 'lQOYBGXsoakPGPbodyQ29udGV4dEd1YXJk',
  },
];

/** Complete planted secrets found in `text` (by name). */
export function leakedSecrets(text: string): string[] {
  if (text.length < 16) return [];
  const out: string[] = [];
  for (const s of PLANTED_SECRETS) if (text.includes(s.expression.trim()) && text.includes(s.value)) out.push(s.name);
  return out;
}

/**
 * Text of anything (messages, a summarizer input, a stored state) for the leak scan: strings
 * joined, bytes and cycles skipped, media payloads (`data`, `image`) left out.
 */
export function textOfValue(value: unknown, out: string[] = [], seen = new Set<object>()): string[] {
  if (typeof value === 'string') out.push(value);
  else if (value && typeof value === 'object' && !ArrayBuffer.isView(value) && !seen.has(value)) {
    seen.add(value);
    for (const [k, v] of Object.entries(value)) if (k !== 'data' && k !== 'image') textOfValue(v, out, seen);
  }
  return out;
}

/**
 * Texts that made a redaction pattern superlinear: long runs of a pattern's
 * prefix with no ending. At most ADVERSARIAL_CHARS each, and rare: a run that still takes seconds
 * shows as a stall rather than hiding the rest of the soak.
 */
export const ADVERSARIAL_RUNS = {
  'jwt-run': 'eyJ-',
  'jwt-dot-run': 'eyJhbGciOi.',
  'pem-run': '-----BEGIN RSA PRIVATE KEY-----\n',
  'pgp-run': '-----BEGIN PGP PRIVATE KEY BLOCK-----',
  'dots-run': 'a.b.c.d.',
  'dashes-run': 'abc-def-',
  'scheme-run': 'redis://:',
  'env-run': 'DB_PASSWORD=',
  'json-run': '"password": "',
  'aws-run': 'aws_secret_access_key = ',
  'bearer-run': 'Bearer Bearer ',
} as const;
export type AdversarialStyle = keyof typeof ADVERSARIAL_RUNS;
export const ADVERSARIAL_CHARS = 100_000;
export const adversarialArb = fc.record({
  style: fc.constantFrom(...(Object.keys(ADVERSARIAL_RUNS) as AdversarialStyle[])),
  chars: fc.integer({ min: 20_000, max: ADVERSARIAL_CHARS }),
});
export type AdversarialSpec = typeof adversarialArb extends fc.Arbitrary<infer T> ? T : never;

export function adversarialText(label: string, spec: AdversarialSpec): string {
  const run = ADVERSARIAL_RUNS[spec.style];
  return `${label} ${run.repeat(Math.ceil(spec.chars / run.length))}`;
}

/**
 * Whether a history entry is an object with a role the guard knows (cycles aside): what the soak's own checks may read.
 */
export function isMessage(entry: unknown): entry is GuardMessage {
  if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return false;
  const role = (entry as { role?: unknown }).role;
  return role === 'system' || role === 'user' || role === 'assistant' || role === 'tool';
}
