// The user's words, precisely: every sentence the user wrote (prose, not pasted code, logs or data;
// in any language and any case, with or without a word such as "never") is kept verbatim in the
// prompt through every summarizer outcome, within the footer's budget, and whatever cannot be kept
// is reported by a `user-words-dropped` event naming the message. The scenario of issue 21: 17
// rules, each written after a pasted log, `keepUserMessagesTokens: 50`, with the summarizer
// throwing, hanging, answering `ok`, answering 250 KB, or answering a terse valid summary.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { collectInstructions, instructionsOf, renderInstructions } from '../../src/compaction/instructions.ts';
import { proseSentences } from '../../src/compaction/prose.ts';
import { createContextGuard, type ContextGuardOptions, type GuardMessage } from '../../src/index.ts';
import { assistant, recorder, system, toolStep, user } from '../helpers.ts';
import { contentText } from './builders.ts';

/** Rules in the shapes the keyword-based picker missed: lower-case starts that read as code, lines ending in `;` or `}`, rules without a keyword, other languages and cases. */
const RULES = [
  'if the tests fail, stop and tell me before changing anything else.',
  'for every file you touch, add or update a unit test.',
  'while you are in there, keep the public API exactly as it is;',
  'at the end of each step, run the linter and fix what it reports.',
  'return to me with a plan before deleting any file.',
  'name the branch after the ticket {like CG-123}',
  'Use pnpm, not npm.',
  'Only edit files under src/.',
  'Reply to me in French.',
  'Ne touche jamais à la base de production.',
  '请不要修改数据库的表结构。',
  'テストは必ず日本時間で実行してください。',
  'DO NOT DEPLOY ON FRIDAYS.',
  'Не трогай папку vendor.',
  'Nunca subas secretos al repositorio.',
  'Bitte schreibe alle Commit-Nachrichten auf Englisch.',
  'Use TypeScript, not JavaScript, for the new scripts.',
];

/** A pasted log: timestamps, levels, a stack trace, JSON, a diff and a shell session. */
function pastedLog(i: number): string {
  return [
    `2026-11-24 10:0${i % 10}:01 INFO starting build ${i}`,
    `2026-11-24 10:0${i % 10}:02 WARN cache miss for key build-${i}`,
    `[ERROR] Failed to compile module-${i}.ts`,
    `TypeError: Cannot read properties of undefined (reading 'config${i}')`,
    `    at parseConfig (src/config/module-${i}.ts:${10 + i}:7)`,
    '    at Object.<anonymous> (src/index.ts:3:9)',
    '    at Module._compile (node:internal/modules/cjs/loader:1105:14)',
    `{"level":"error","step":${i},"msg":"compile failed","retry":false}`,
    `diff --git a/src/module-${i}.ts b/src/module-${i}.ts`,
    `@@ -${i},3 +${i},3 @@`,
    `-  const value = config.value${i};`,
    `+  const value = config?.value${i};`,
    '$ pnpm test --filter core',
    ` FAIL  test/module-${i}.test.ts > parses the config`,
    'npm ERR! code ELIFECYCLE',
    `if (config${i} === undefined) {`,
    `  return defaults${i};`,
    '}',
  ].join('\n');
}

function conversation(rounds: number): GuardMessage[] {
  const messages: GuardMessage[] = [system('You are a coding agent.')];
  for (let i = 0; i < rounds; i++) {
    messages.push(user(`${pastedLog(i)}\n${RULES[i]}`));
    messages.push(...toolStep(`read-${i}`, { path: `src/module-${i}.ts` }, `source of module ${i}\n`.repeat(400)));
    messages.push(assistant(`Fixed module ${i}.`));
  }
  messages.push(user('Now run the whole test suite.'));
  return messages;
}

type Mode = 'throws' | 'hangs' | 'ok' | '250 KB' | 'terse';

function summarizerOf(mode: Mode): Partial<ContextGuardOptions> {
  switch (mode) {
    case 'throws':
      return { summarizer: async () => Promise.reject(new Error('summarizer down')) };
    case 'hangs':
      return { summarizer: () => new Promise<string>(() => {}), summarizerTimeoutMs: 50 };
    case 'ok':
      return { summarizer: async () => 'ok' };
    case '250 KB':
      return { summarizer: async () => 'The agent fixed modules. '.repeat(10_000) };
    case 'terse':
      return { summarizer: async () => '## Task state\nFixing modules one by one.\n## User guidance\n(none)' };
  }
}

const MODES: Mode[] = ['throws', 'hangs', 'ok', '250 KB', 'terse'];

describe('17 rules, each after a pasted log: every one in the prompt, or reported', () => {
  for (const mode of MODES) {
    it(`summarizer ${mode}`, async () => {
      const ev = recorder();
      const guard = createContextGuard({
        contextWindow: 32_000,
        keepUserMessagesTokens: 50,
        onEvent: ev.onEvent,
        ...summarizerOf(mode),
      });
      let last: GuardMessage[] = [];
      let compactions = 0;
      for (let round = 1; round <= RULES.length; round++) {
        const r = await guard.beforeModel({ sessionId: `rules-${mode}`, messages: conversation(round) });
        if (r.compaction) compactions++;
        last = r.messages;
        await guard.afterModel({ sessionId: `rules-${mode}`, usage: { inputTokens: Math.round(r.tokens) } });
      }
      expect(compactions).toBeGreaterThan(0);
      const sent = last.map(contentText).join('\n');
      const reported = new Set(ev.of('user-words-dropped').flatMap((e) => e.messages.map((m) => m.index)));
      const input = conversation(RULES.length);
      const missing = RULES.filter((rule) => {
        if (sent.includes(rule)) return false;
        const index = input.findIndex((m) => m.role === 'user' && contentText(m).includes(rule));
        return !reported.has(index);
      });
      expect(missing).toEqual([]);
      // With this budget nothing had to be left out.
      expect(ev.of('user-words-dropped')).toEqual([]);
    });
  }

  it('what does not fit the budget is reported per message, the newest kept', async () => {
    const ev = recorder();
    const guard = createContextGuard({
      contextWindow: 32_000,
      keepUserMessagesTokens: 0,
      onEvent: ev.onEvent,
      summarizer: async () => 'ok',
    });
    // Long rules: 17 × ~2,400 characters of prose is more than the footer holds.
    const long = (i: number) =>
      Array.from({ length: 24 }, (_, k) => `Rule ${i}.${k}: keep the module ${i} behaviour number ${k} as it is.`).join(
        ' ',
      );
    const messages: GuardMessage[] = [system('You are a coding agent.')];
    for (let i = 0; i < 17; i++) {
      messages.push(
        user(`${pastedLog(i)}\n${long(i)}`),
        ...toolStep(`t${i}`, { i }, 'out\n'.repeat(900)),
        assistant('ok'),
      );
    }
    messages.push(user('Go on.'));
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction).toBeDefined();
    const dropped = ev.of('user-words-dropped');
    expect(dropped.length).toBe(1);
    const event = dropped[0]!;
    expect(event.sentences).toBeGreaterThan(0);
    expect(event.chars).toBeGreaterThan(0);
    expect(event.messages.every((m) => messages[m.index]?.role === 'user')).toBe(true);
    expect(event.messages.reduce((n, m) => n + m.sentences, 0)).toBe(event.sentences);
    // The newest rules are in the prompt, whole.
    const sent = r.messages.map(contentText).join('\n');
    expect(sent).toContain('Rule 16.23: keep the module 16 behaviour number 23 as it is.');
    // The oldest are the ones reported.
    expect(event.messages[0]?.index).toBe(5); // the first request (1) is kept whole: keepFirstUserMessage
  });
});

describe('proseSentences: what the user wrote, whatever the language or case', () => {
  it('keeps every rule after a pasted log and nothing of the log', () => {
    for (const [i, rule] of RULES.entries()) {
      const sentences = proseSentences(`${pastedLog(i)}\n${rule}`);
      expect(sentences).toEqual([rule]);
    }
  });

  it('keeps prose with inline code, paths and names; leaves out code, logs, data and diffs', () => {
    expect(proseSentences('Rename `getUser` to `fetchUser` in src/api.ts. Call init() first.')).toEqual([
      'Rename `getUser` to `fetchUser` in src/api.ts.',
      'Call init() first.',
    ]);
    expect(proseSentences('Here is the error:\nTypeError: x is undefined\n    at foo (a.js:1:2)\nfix it')).toEqual([
      'Here is the error:',
      'fix it',
    ]);
    const code = [
      'const total = items.reduce((n, x) => n + x, 0);',
      'for (const x of xs) {',
      '  total += x;',
      '}',
      'def area(r):',
      '    return 3.14 * r * r',
      'SELECT id, name FROM users WHERE id = 1;',
      'region: eu-west-1',
      '+  added line',
      '<div class="x">',
      '| a | b |',
      '|---|---|',
    ].join('\n');
    expect(proseSentences(code)).toEqual([]);
  });

  it('takes a message apart by lines: each sentence once, verbatim, secrets redacted first', () => {
    const message = user(
      'Use pnpm, not npm. Use pnpm, not npm.\nconfig:\n  aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nKeep the key out of logs.',
    );
    const redact = (t: string) => t.replace(/wJalr\S+/, '[REDACTED]');
    expect(instructionsOf(message, redact)).toEqual(['Use pnpm, not npm.', 'Keep the key out of logs.']);
    expect(instructionsOf(assistant('Use pnpm, not npm.'))).toEqual([]);
  });

  it('collects the newest whole within the budget and reports the rest per message', () => {
    const messages = [
      { message: user('First rule here.'), index: 1 },
      { message: user('Second rule here. Third rule here.'), index: 3 },
    ];
    const all = collectInstructions(['An earlier rule.'], messages, 10_000, (t) => t);
    expect(all).toEqual({
      notes: ['An earlier rule.', 'First rule here.', 'Second rule here.', 'Third rule here.'],
      lost: [],
    });
    const footer = renderInstructions(all.notes).split('\n')[0] as string;
    const small = collectInstructions(['An earlier rule.'], messages, footer.length + 2 * 20, (t) => t);
    expect(small.notes).toEqual(['Second rule here.', 'Third rule here.']);
    expect(small.lost).toEqual([
      { index: -1, sentences: 1, chars: 16 },
      { index: 1, sentences: 1, chars: 16 },
    ]);
  });
});

// Prose in several languages and cases, and machine text of several kinds, mixed line by line.
const PROSE_WORDS: Record<string, string[]> = {
  en: ['keep', 'the', 'tests', 'green', 'before', 'you', 'merge', 'anything', 'please', 'only', 'files', 'under'],
  fr: ['garde', 'les', 'tests', 'verts', 'avant', 'de', 'fusionner', 'quoi', 'que', 'ce', 'soit', 'jamais'],
  de: ['halte', 'die', 'Tests', 'grün', 'bevor', 'du', 'etwas', 'zusammenführst', 'bitte', 'nur', 'Dateien', 'unter'],
  es: ['mantén', 'las', 'pruebas', 'en', 'verde', 'antes', 'de', 'fusionar', 'nada', 'solo', 'archivos', 'bajo'],
  ru: ['держи', 'тесты', 'зелёными', 'перед', 'тем', 'как', 'что', 'то', 'сливать', 'только', 'файлы', 'никогда'],
};
const CJK = [
  '请在合并之前保持测试通过。',
  'テストを実行してからマージしてください。',
  '배포하기 전에 테스트를 실행하세요.',
];
const MACHINE = [
  '2026-11-24 10:00:01 INFO request handled in 12 ms',
  '[WARN] retrying connection to db-3',
  '    at handler (src/routes/user.ts:42:13)',
  'TypeError: Cannot read properties of null',
  '{"id": 42, "status": "failed", "tags": ["a", "b"]}',
  'diff --git a/src/x.ts b/src/x.ts',
  '@@ -1,4 +1,4 @@',
  '-  return a + b;',
  '+  return a - b;',
  'const result = await fetchUser(id);',
  'export function sum(a: number, b: number): number {',
  '$ npm run build',
  'npm ERR! code ELIFECYCLE',
  'Traceback (most recent call last):',
  '  File "main.py", line 3, in <module>',
  'region: eu-west-1',
  'x = compute(a, b)',
];

const sentenceArb = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(...Object.keys(PROSE_WORDS)),
      fc.integer({ min: 4, max: 12 }),
      fc.constantFrom('lower', 'upper', 'title'),
      fc.constantFrom('.', '!', '?', ';', ''),
      fc.infiniteStream(fc.nat()),
    )
    .map(([lang, n, kase, end, picks]) => {
      const words = PROSE_WORDS[lang] as string[];
      const it = picks[Symbol.iterator]();
      let s = Array.from({ length: n }, () => words[(it.next().value as number) % words.length]).join(' ');
      if (kase === 'upper') s = s.toUpperCase();
      if (kase === 'title') s = s[0]?.toUpperCase() + s.slice(1);
      return `${s}${end}`;
    }),
  fc.constantFrom(...CJK),
);

describe('what the footer keeps first', () => {
  it('a rule in a short paragraph before long stretches of prose, newer or not', () => {
    const essay = (i: number) =>
      Array.from(
        { length: 8 },
        (_, k) => `Paragraph ${i} sentence ${k} describes the billing flow in some detail.`,
      ).join(' ');
    const messages = [
      { message: user(`Context first.\n\n${essay(0)}\n\nNever touch the ledger tables.`), index: 1 },
      { message: user(essay(1)), index: 3 },
      { message: user(essay(2)), index: 5 },
    ];
    const header = renderInstructions(['x']).length - '\n- x'.length;
    const { notes, lost } = collectInstructions(['An earlier rule.'], messages, header + 600, (t) => t);
    // The short paragraphs first, then the earlier footer, then the newest prose while it fits.
    expect(notes.slice(0, 3)).toEqual(['An earlier rule.', 'Context first.', 'Never touch the ledger tables.']);
    expect(notes.slice(3).every((n) => n.startsWith('Paragraph 2'))).toBe(true);
    expect(lost.map((l) => l.index)).toEqual([1, 3, 5]);
  });
});

describe('property: prose and machine text mixed', () => {
  it('every prose sentence is kept verbatim, no line of machine text is', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            sentenceArb.map((s) => ({ prose: s })),
            fc.constantFrom(...MACHINE).map((m) => ({ machine: m })),
          ),
          {
            minLength: 1,
            maxLength: 30,
          },
        ),
        (lines) => {
          const text = lines.map((l) => ('prose' in l ? l.prose : l.machine)).join('\n');
          const kept = proseSentences(text);
          for (const l of lines) {
            if ('prose' in l) expect(kept).toContain(l.prose);
            else expect(kept.some((k) => l.machine.includes(k) && k.length > 3)).toBe(false);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
