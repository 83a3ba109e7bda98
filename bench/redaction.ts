// Time of the default redaction on adversarial input: each secret shape fed megabytes of its own
// worst case (repeated prefixes, near-misses, long runs without the expected ending).
//
//   node bench/redaction.ts                   (1, 2 and 4 MB, 5 runs each)
//   node bench/redaction.ts --quick           (1 MB, 3 runs)
//   node bench/redaction.ts --impl FILE --sizes 0.1,0.2 --runs 1
//                                             (time another redactSecrets, e.g. an older copy of
//                                              src/compaction/redact.ts, at 100 and 200 KB)
//   node bench/redaction.ts --quick --vs FILE (this redactSecrets against another, paired: the two
//                                              alternate on each input, so that a machine shared
//                                              with other work slows both alike)
//
// Every shape must be linear: from 1 to 2 to 4 MB a time should double, not quadruple. The second
// table replays the examples found by probing the guard, the last through beforeModel (a compaction whose
// summarizer input holds the text).
import { readdirSync, readFileSync } from 'node:fs';
import { createContextGuard, type GuardMessage } from '../src/index.ts';
import { SECRET_SHAPE_LABELS } from '../src/compaction/redact.ts';
import { GITLEAKS_RULES } from '../src/compaction/secret-rules.generated.ts';
import { LOCAL_RULES } from '../src/compaction/secret-rules.ts';

/** Every keyword of the scanner's rules. */
const RULE_KEYWORDS = [...new Set([...LOCAL_RULES, ...GITLEAKS_RULES].flatMap((r) => r.keywords))];

const MB = 1 << 20;

function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const quick = process.argv.includes('--quick');
const SIZES = (option('--sizes') ?? (quick ? '1' : '1,2,4')).split(',').map((s) => Math.round(Number(s) * MB));
const RUNS = Number(option('--runs') ?? (quick ? 3 : 5));
const implPath = option('--impl');
const vsPath = option('--vs');
const redactSecrets: (text: string) => string = implPath
  ? ((await import(new URL(implPath, `file://${process.cwd()}/`).href)) as { redactSecrets: (text: string) => string })
      .redactSecrets
  : (await import('../src/compaction/redact.ts')).redactSecrets;

/** `unit` repeated to `size` characters. */
const fill = (unit: string, size: number): string => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);

interface Case {
  label: string;
  name: string;
  make: (size: number) => string;
}

/** A readable name for a piece of input: long runs of one character shortened (`u×255`). */
const show = (text: string): string =>
  JSON.stringify(text)
    .slice(1, -1)
    .replace(/(.)\1{7,}/g, (m, c: string) => `${c}×${m.length}`);

const repeated = (label: string, unit: string): Case => ({
  label,
  name: `(${show(unit)})*`,
  make: (size) => fill(unit, size),
});
const run = (label: string, head: string, body: string, tail = ''): Case => ({
  label,
  name: `${show(head)}(${show(body)})*${show(tail)}`,
  make: (size) => head + fill(body, size - head.length - tail.length) + tail,
});

const RSA = 'RSA PRIVATE KEY';
const ADVERSARIAL: readonly Case[] = [
  repeated('private-key', `-----BEGIN ${RSA}-----`),
  repeated('private-key', `-----BEGIN ${RSA}-----\nMIIEowIBAAKCAQEA\n`),
  repeated('private-key', `-----BEGIN ${RSA}-----\nMIIEowIBAAKCAQEA\n-----END ${RSA}-----\n`),
  repeated('private-key', `-----END ${RSA}-----`),
  repeated('private-key', `-----BEGIN ${'A'.repeat(40)} PRIVATE KE-----`),
  run('private-key', `-----BEGIN ${RSA}-----\n`, 'MIIEowIBAAKCAQEA+/=\n'),
  run('private-key', `-----BEGIN ${RSA}-----\\n`, 'MIIEowIBAAKCAQEA\\n'),
  repeated('private-key', '-'),
  repeated('anthropic-key', 'sk-ant-'),
  repeated('anthropic-key', `sk-ant-${'a'.repeat(19)} `),
  repeated('openai-key', 'sk-'),
  repeated('openai-key', 'sk-proj-'),
  repeated('openai-key', `sk-${'a'.repeat(19)} `),
  repeated('aws-access-key', 'AKIA'),
  repeated('aws-access-key', `AKIA${'A'.repeat(15)} `),
  repeated('github-token', 'ghp_'),
  repeated('github-token', '-ghp_'),
  run('github-token', 'ghp_', 'a', '_'),
  run('github-token', 'github_pat_', 'a', '-'),
  repeated('slack-token', 'xoxb-'),
  repeated('slack-token', `xoxb-${'a'.repeat(9)} `),
  repeated('google-api-key', 'AIza'),
  run('google-api-key', 'AIza', 'a'),
  repeated('stripe-key', 'sk_live_'),
  repeated('stripe-key', `sk_live_${'a'.repeat(19)} `),
  repeated('jwt', 'eyJ-'),
  repeated('jwt', '-eyJ'),
  repeated('jwt', 'eyJaaaaaaaa.'),
  repeated('jwt', 'eyJaaaaaaaa.eyJ-'),
  run('jwt', 'eyJ', 'a'),
  run('jwt', 'eyJaaaaaaaa.eyJ', 'a'),
  repeated('bearer-token', 'Bearer '),
  repeated('bearer-token', `Bearer ${'a'.repeat(15)} `),
  run('bearer-token', 'Bearer', ' ', 'x'),
  // The scanner's rules (secret-rules.ts): every keyword of every rule at once, each rule's
  // keyword repeated, keywords before runs of their token alphabet, near-misses.
  {
    label: 'secret-rules',
    name: '(every keyword of every rule, spaced)*',
    make: (size) => fill(`${RULE_KEYWORDS.join(' ')} `, size),
  },
  {
    label: 'secret-rules',
    name: '(every keyword of every rule, joined)*',
    make: (size) => fill(RULE_KEYWORDS.join(''), size),
  },
  repeated('secret-rules', 'glpat-'),
  repeated('secret-rules', 'glpat- '),
  run('secret-rules', 'gsk_', 'a'),
  repeated('secret-rules', `hf_${'a'.repeat(33)} `),
  repeated('secret-rules', 'AccountKey='),
  repeated('secret-rules', `SG.${'a'.repeat(65)} `),
  repeated('secret-rules', 'xoxb-1'),
  repeated('secret-header', 'x-api-key: '),
  repeated('secret-header', 'x-api-key: !'),
  repeated('secret-header', 'x-api-key:'),
  run('secret-header', 'x-api-key: ', 'a'),
  repeated('url-credentials', 'https://a:'),
  repeated('url-credentials', 'redis://:'),
  repeated('url-credentials', 'https://u:p@'),
  repeated('url-credentials', `a://${'u'.repeat(255)}:${'p'.repeat(255)} `),
  repeated('url-credentials', 'a.'),
  repeated('secret-assignment', 'password='),
  repeated('secret-assignment', 'DB_PASS='),
  repeated('secret-assignment', 'BYPASS='),
  repeated('secret-assignment', 'MNEMONIC='),
  run('secret-assignment', 'MNEMONIC=', 'word '),
  repeated('secret-assignment', '"key": "'),
  repeated('secret-assignment', 'DB_PASSWORD='),
  repeated('secret-assignment', 'password: '),
  repeated('secret-assignment', '"password": "'),
  repeated('secret-assignment', `password='"\\"`),
  repeated('secret-assignment', '\\"password\\":\\"'),
  repeated('secret-assignment', 'password=f('),
  repeated('secret-assignment', '--password '),
  repeated('secret-assignment', 'password'),
  repeated('secret-assignment', 'a-'),
  repeated('secret-assignment', 'x_token:\n'),
  run('secret-assignment', '"password": "', 'a'),
  run('secret-assignment', 'token=', '<'),
  run('secret-assignment', '', ' ', 'password: x'),
  run('secret-assignment', '', 'a'),
];

/** This repository's own source files, repeated: ordinary code, comments and JSON-like text. */
function ordinaryText(size: number): string {
  const files = readdirSync(new URL('../src/', import.meta.url), { recursive: true, encoding: 'utf8' }).filter((f) =>
    f.endsWith('.ts'),
  );
  const source = files.map((f) => readFileSync(new URL(`../src/${f}`, import.meta.url), 'utf8')).join('\n');
  return fill(source, size);
}

/** Milliseconds of `runs` calls of `redactSecrets(text)`, sorted. */
function time(text: string, runs: number): number[] {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    redactSecrets(text);
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b);
}

const median = (sorted: number[]): number => sorted[Math.floor(sorted.length / 2)]!;
const ms = (x: number): string => (x < 10 ? x.toFixed(1) : x.toFixed(0));
const sizeLabel = (size: number): string => (size >= MB ? `${size / MB} MB` : `${Math.round(size / 1024)} KB`);

// Warm-up: compile every pattern before anything is timed.
for (const c of ADVERSARIAL) redactSecrets(c.make(4096));

const ORDINARY: Case = {
  label: 'all shapes',
  name: 'ordinary text: the source files of src/, repeated',
  make: ordinaryText,
};
if (vsPath) {
  const other = (
    (await import(new URL(vsPath, `file://${process.cwd()}/`).href)) as { redactSecrets: (text: string) => string }
  ).redactSecrets;
  for (const c of ADVERSARIAL) other(c.make(4096));
  const size = SIZES[0] as number;
  console.log(`node ${process.version}, ${RUNS} runs per cell, each input at ${sizeLabel(size)}, against ${vsPath}\n`);
  console.log('| shape | input | this, median ms | the other, median ms | this / the other |');
  console.log('|---|---|---:|---:|---:|');
  for (const c of [...ADVERSARIAL, ORDINARY]) {
    const text = c.make(size);
    const mine: number[] = [];
    const theirs: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      for (const [fn, into] of [
        [redactSecrets, mine],
        [other, theirs],
      ] as const) {
        const t = performance.now();
        fn(text);
        into.push(performance.now() - t);
      }
    }
    const a = median(mine.sort((x, y) => x - y));
    const b = median(theirs.sort((x, y) => x - y));
    console.log(`| ${c.label} | \`${c.name.replaceAll('|', '\\|')}\` | ${ms(a)} | ${ms(b)} | ${(a / b).toFixed(2)} |`);
  }
  process.exit(0);
}
const results = [...ADVERSARIAL, ORDINARY].map((c) => ({ ...c, times: SIZES.map((size) => time(c.make(size), RUNS)) }));

console.log(`node ${process.version}, ${RUNS} runs per cell${implPath ? `, redactSecrets from ${implPath}` : ''}\n`);
console.log('All cases: min / median / max ms of one redactSecrets call\n');
console.log(`| shape | input | ${SIZES.map(sizeLabel).join(' | ')} |`);
console.log(`|---|---|${SIZES.map(() => '---:').join('|')}|`);
for (const r of results) {
  const cells = r.times.map((t) => `${ms(t[0]!)} / ${ms(median(t))} / ${ms(t[t.length - 1]!)}`);
  console.log(`| ${r.label} | \`${r.name.replaceAll('|', '\\|')}\` | ${cells.join(' | ')} |`);
}

console.log(`\nWorst case per shape at ${sizeLabel(SIZES[0]!)} (median ms), and the same input at the other sizes\n`);
const ratioHeader = SIZES.length > 1 ? ` ${sizeLabel(SIZES[SIZES.length - 1]!)} / ${sizeLabel(SIZES[0]!)} |` : '';
console.log(`| shape | worst input | ${SIZES.map(sizeLabel).join(' | ')} |${ratioHeader}`);
console.log(`|---|---|${SIZES.map(() => '---:').join('|')}|${SIZES.length > 1 ? '---:|' : ''}`);
for (const label of [...SECRET_SHAPE_LABELS, ORDINARY.label]) {
  const worst = results.filter((r) => r.label === label).sort((a, b) => median(b.times[0]!) - median(a.times[0]!))[0];
  if (!worst) continue;
  const medians = worst.times.map(median);
  const ratio = SIZES.length > 1 ? ` ${(medians[medians.length - 1]! / medians[0]!).toFixed(1)}× |` : '';
  console.log(`| ${label} | \`${worst.name.replaceAll('|', '\\|')}\` | ${medians.map(ms).join(' | ')} |${ratio}`);
}

// The examples found by probing the guard, with the guard around them.
async function beforeModelWith(place: 'user message' | 'tool-call input', secretish: string): Promise<number> {
  const guard = createContextGuard({ contextWindow: 8_000, summarizer: () => '## Task state\nDone.' });
  const filler = (i: number): GuardMessage[] => [
    { role: 'user', content: `Question ${i}: ${'words '.repeat(400)}` },
    { role: 'assistant', content: [{ type: 'text', text: `Answer ${i}: ${'prose '.repeat(400)}` }] },
  ];
  const call = {
    type: 'tool-call',
    toolCallId: 'c1',
    toolName: 'write_file',
    input: { path: 'a.txt', content: secretish },
  } as const;
  const result = {
    type: 'tool-result',
    toolCallId: 'c1',
    toolName: 'write_file',
    output: { type: 'text', value: 'ok' },
  } as const;
  const held: GuardMessage[] =
    place === 'user message'
      ? [
          { role: 'user', content: secretish },
          { role: 'assistant', content: [{ type: 'text', text: 'Noted.' }] },
        ]
      : [
          { role: 'assistant', content: [call] },
          { role: 'tool', content: [result] },
        ];
  const system: GuardMessage = { role: 'system', content: 'You are an agent.' };
  const messages: GuardMessage[] = [system, ...held, ...filler(1), ...filler(2), { role: 'user', content: 'Go on.' }];
  const t = performance.now();
  const r = await guard.beforeModel({ sessionId: 's', messages });
  const elapsed = performance.now() - t;
  if (!r.compaction) throw new Error('the example did not compact: nothing was redacted');
  return elapsed;
}

if (!implPath) {
  const eyj = 'eyJ-'.repeat(25_000);
  const examples: Array<[string, () => number | Promise<number>]> = [
    ["redactSecrets('eyJ-'.repeat(25_000)) (100 KB)", () => median(time(eyj, RUNS))],
    ["redactSecrets('eyJ-'.repeat(50_000)) (200 KB)", () => median(time('eyJ-'.repeat(50_000), RUNS))],
    [
      'redactSecrets(100 KB of repeated BEGIN headers)',
      () => median(time(fill(`-----BEGIN ${RSA}-----`, 100_000), RUNS)),
    ],
    ['beforeModel, the 100 KB text in a user message', () => beforeModelWith('user message', eyj)],
    ['beforeModel, the 100 KB text in a tool-call input', () => beforeModelWith('tool-call input', eyj)],
  ];
  console.log(
    '\nExamples found by probing the guard (median ms of redactSecrets; one beforeModel call that compacts)\n',
  );
  console.log('| example | ms |');
  console.log('|---|---:|');
  for (const [name, measure] of examples) console.log(`| ${name} | ${ms(await measure())} |`);
}
