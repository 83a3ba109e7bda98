// Regenerates src/compaction/secret-rules.generated.ts from gitleaks' rule set (config/gitleaks.toml
// of the gitleaks/gitleaks repository, MIT licence): the secret formats of a maintained scanner, as
// data, for the default redaction.
//
//   node scripts/vendor-gitleaks-rules.ts <gitleaks checkout> [its version, for the header]
//   (reads <checkout>/config/gitleaks.toml and <checkout>/LICENSE; prints what it kept and left out)
//
// Gitleaks writes its rules for Go's RE2, an engine that never backtracks. V8's does, so a rule is
// kept only when it stays linear here, which this script checks in three ways:
//   - it converts (`(?i)` inside a pattern becomes `(?i:…)` to the end of its group, `(?P<n>` `(?<n>`);
//   - no quantifier is unbounded (`*`, `+`, `{n,}`): every attempt of the regex reads a bounded
//     stretch, and the redaction runs it only where its keywords are: once where one starts when
//     every match starts with a keyword, else over the stretch around each (see secret-rules.ts);
//   - it is timed on inputs built to make a backtracking engine stall (its keyword repeated, its
//     keyword before long runs of each character class the rule reads, near-misses repeated), at
//     two sizes (32 and 64 KB): a rule whose time more than triples when the input doubles, or that
//     takes more than TOO_SLOW_MS on the larger one, is left out.
// Rules the redaction already covers with a finder of its own (private keys, JWTs, the generic
// `key = value` rule) are left out too, and so are rules without keywords (the keyword is what
// tells the redaction where to look).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const checkout = process.argv[2];
const version = process.argv[3] ?? 'unknown version';
if (!checkout) {
  console.error('usage: node scripts/vendor-gitleaks-rules.ts <gitleaks checkout>');
  process.exit(2);
}
const toml = readFileSync(join(checkout, 'config/gitleaks.toml'), 'utf8');
const licence = readFileSync(join(checkout, 'LICENSE'), 'utf8').trim();
const OUT = new URL('../src/compaction/secret-rules.generated.ts', import.meta.url);

/** Rules with a finder of their own in redact.ts (or none worth having: a bare generic rule). */
const COVERED = new Set(['generic-api-key', 'private-key', 'jwt', 'jwt-base64', 'pkcs12-file']);
const TOO_SLOW_MS = 20;

interface Rule {
  id: string;
  source: string;
  flags: string;
  keywords: string[];
  /** The capturing group holding the secret (0: the whole match). */
  group: number;
}

/**
 * What gitleaks requires after most tokens: a quote, a blank, `;`, an escaped line break or the
 * end. The redaction takes anything that cannot continue a token instead, so that a token ending a
 * sentence (`…GH.`) or a call (`f(…GH)`) is found too.
 */
const TOKEN_END = `(?:[\\x60'"\\s;]|\\\\[nr]|$)`;

/** Go (RE2) → JavaScript. */
function toJs(go: string): { source: string; flags: string } {
  let src = go;
  let flags = '';
  if (src.startsWith('(?i)')) {
    src = src.slice(4);
    flags = 'i';
  }
  src = src.replace(/\(\?P</g, '(?<');
  for (;;) {
    const at = inlineFlag(src);
    if (at < 0) break;
    // `(?i)` inside a group applies to the rest of it: the rest becomes `(?i:…)`.
    let depth = 0;
    let i = at + 4;
    let inClass = false;
    for (; i < src.length; i++) {
      const c = src[i];
      if (c === '\\') {
        i++;
        continue;
      }
      if (inClass) {
        if (c === ']') inClass = false;
        continue;
      }
      if (c === '[') inClass = true;
      else if (c === '(') depth++;
      else if (c === ')') {
        if (depth === 0) break;
        depth--;
      } else if (c === '|' && depth === 0) break;
    }
    src = `${src.slice(0, at)}(?i:${src.slice(at + 4, i)})${src.slice(i)}`;
  }
  return { source: src, flags };
}

function inlineFlag(src: string): number {
  let inClass = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') inClass = true;
    else if (src.startsWith('(?i)', i)) return i;
  }
  return -1;
}

/** Whether a quantifier outside character classes is unbounded. */
function unbounded(source: string): boolean {
  const outside = source.replace(/\\./g, 'x').replace(/\[[^\]]*\]/g, 'x');
  return /[*+]|\{\d+,\}/.test(outside);
}

function parseRules(text: string): Array<{ id: string; regex?: string; keywords: string[]; group: number }> {
  return text
    .split(/^\[\[rules\]\]\s*$/m)
    .slice(1)
    .map((block) => {
      const head = block.split(/^\[\[rules\.allowlists\]\]/m)[0] as string;
      const keywords = /^keywords = \[([\s\S]*?)\]/m.exec(head)?.[1];
      return {
        id: /^id = "([^"]+)"/m.exec(head)?.[1] ?? '',
        regex: /^regex = '''(.*)'''$/m.exec(head)?.[1],
        keywords: keywords ? [...keywords.matchAll(/"([^"]*)"/g)].map((m) => (m[1] as string).toLowerCase()) : [],
        group: Number(/^secretGroup = (\d+)/m.exec(head)?.[1] ?? -1),
      };
    });
}

/** The characters of the rule's character classes, a few of each, for the adversarial runs. */
function classSamples(source: string): string[] {
  const samples = new Set<string>(['a', 'A', '0', '_', '-', '.', ' ', '=', '"']);
  for (const m of source.matchAll(/\[([^\]]*)\]/g)) {
    const body = m[1] as string;
    for (const range of body.matchAll(/(\w)-(\w)/g)) samples.add(range[1] as string);
    for (const ch of body.replace(/\\./g, '')) if (/[!-~]/.test(ch)) samples.add(ch);
  }
  return [...samples].slice(0, 24);
}

/** Over the bound, or clearly more than linear (the time more than triples when the input doubles). */
const tooSlow = (small: number, large: number): boolean => large > TOO_SLOW_MS || (large > 5 && large > 3 * small);

function time(regex: RegExp, text: string): number {
  const start = performance.now();
  regex.lastIndex = 0;
  for (const _ of text.matchAll(regex));
  return performance.now() - start;
}

/**
 * The slowest adversarial input's time at 32 and 64 KB (stopping at the first input over
 * TOO_SLOW_MS: the rule is out anyway).
 */
function adversarial(regex: RegExp, rule: Rule): { small: number; large: number; worst: string } {
  const inputs: Array<[label: string, make: (size: number) => string]> = [];
  const repeated = (unit: string) => (size: number) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
  const classes = classSamples(rule.source);
  for (const keyword of rule.keywords.slice(0, 2)) {
    for (const unit of [keyword, `${keyword} `, `${keyword}=`, `${keyword}_`, `${keyword}-`, `${keyword}.`])
      inputs.push([unit, repeated(unit)]);
    for (const c of classes) {
      inputs.push([`(${keyword}${c}×40)*`, repeated(`${keyword}${c.repeat(40)}`)]);
      inputs.push([`(${keyword} = '${c}×30' )*`, repeated(`${keyword} = '${c.repeat(30)}' `)]);
      // One keyword before a long run of one class character: an attempt that reads far.
      inputs.push([`${keyword}${c}…`, (size) => `${keyword}${c.repeat(size)}`]);
    }
  }
  let worst = { small: 0, large: 0, worst: '' };
  for (const [label, make] of inputs) {
    // A catastrophic rule shows at 4 KB already: it is not run on more (that could take minutes).
    const four = make(4 * 1024);
    let tiny = time(regex, four);
    for (let i = 0; i < 2 && tiny > TOO_SLOW_MS / 8; i++) tiny = Math.min(tiny, time(regex, four));
    if (tiny > TOO_SLOW_MS / 8) return { small: tiny, large: tiny * 256, worst: `${label} (at 4 KB)` };
    const texts = [make(32 * 1024), make(64 * 1024)] as const;
    let small = time(regex, texts[0]);
    let large = time(regex, texts[1]);
    // A time that looks bad is taken again, the best of three: a collection or a compilation
    // that happened to fall in one run says nothing of the rule.
    if (tooSlow(small, large)) {
      for (let i = 0; i < 2; i++) {
        small = Math.min(small, time(regex, texts[0]));
        large = Math.min(large, time(regex, texts[1]));
      }
    }
    if (large > worst.large || tooSlow(small, large)) worst = { small, large, worst: label };
    if (tooSlow(small, large)) break;
  }
  return worst;
}

const kept: Rule[] = [];
const left: Array<[string, string]> = [];
for (const raw of parseRules(toml)) {
  if (COVERED.has(raw.id)) {
    left.push([raw.id, 'covered by a finder of redact.ts']);
    continue;
  }
  if (!raw.regex) {
    left.push([raw.id, 'no content regex']);
    continue;
  }
  if (raw.keywords.length === 0) {
    left.push([raw.id, 'no keywords']);
    continue;
  }
  const { source, flags } = toJs(raw.regex.split(TOKEN_END).join('(?![\\w-])'));
  let regex: RegExp;
  try {
    regex = new RegExp(source, `${flags}gd`);
  } catch (error) {
    left.push([raw.id, `does not convert: ${(error as Error).message.slice(0, 60)}`]);
    continue;
  }
  if (unbounded(source)) {
    left.push([raw.id, 'an unbounded quantifier']);
    continue;
  }
  const groups = new RegExp(`${source}|`, flags).exec('')?.length ?? 1;
  const group = raw.group >= 0 ? raw.group : groups > 1 ? 1 : 0;
  const rule: Rule = { id: raw.id, source, flags, keywords: raw.keywords, group };
  process.stderr.write(`${raw.id}\n`);
  // Warm the regex, then time it.
  time(regex, 'x'.repeat(1_000));
  const t = adversarial(regex, rule);
  if (tooSlow(t.small, t.large)) {
    left.push([
      raw.id,
      `slow on ${JSON.stringify(t.worst)}: ${t.small.toFixed(1)} ms at 32 KB, ${t.large.toFixed(1)} at 64 KB`,
    ]);
    continue;
  }
  kept.push(rule);
}

const header = `// GENERATED by scripts/vendor-gitleaks-rules.ts from gitleaks' config/gitleaks.toml (${version}): do not edit.
// ${kept.length} rules of ${kept.length + left.length}; the others are listed at the end of this file with why.
//
// The rules are gitleaks' (https://gitleaks.io), under its licence:
//
${licence
  .split('\n')
  .map((line) => `//   ${line}`.trimEnd())
  .join('\n')}
`;

const body = `
/** One secret format: a regex (JavaScript syntax, bounded), the keywords one of which it needs, the group holding the secret. */
export interface SecretRule {
  readonly id: string;
  readonly source: string;
  readonly flags: string;
  /** Lower case; the redaction runs the regex only around where one occurs. */
  readonly keywords: readonly string[];
  /** The capturing group that holds the secret; 0: the whole match. */
  readonly group: number;
}

export const GITLEAKS_RULES: readonly SecretRule[] = ${JSON.stringify(kept, null, 2)};

// Left out:
${left.map(([id, why]) => `//   ${id}: ${why}`).join('\n')}
`;
writeFileSync(OUT, header + body);
console.log(`kept ${kept.length}, left out ${left.length}:`);
for (const [id, why] of left) console.log(`  ${id}: ${why}`);
