// Compaction on a small window, runnable offline: `npm run build && npm run example:compaction`.
// An 8,000-token window (threshold 6,400, compaction target 4,000) and a coding session whose tool
// outputs and chat outgrow it:
//   call 1: over the threshold; pruning is enough (the cheapest step): oversized tool outputs are
//           truncated and the oldest replaced by placeholders (the failed test run's error is kept);
//   call 2: more chat and reads; placeholders would no longer reach the target, so the older part
//           and the start of the latest turn are summarized, and a continuation quotes the request;
//   call 3: the host resends its whole history (as the AI SDK does); the stored summary is
//           re-applied without calling the summarizer, and the compacted prefix is byte-identical.
// No usage is fed back with afterModel here, so every estimate is chars / 4 × 1.5 (the default
// correction); see examples/quickstart.ts for the full loop.
import {
  createContextGuard,
  SUMMARY_SECTIONS,
  type GuardMessage,
  type SummarizerInput,
  type ToolResultOutput,
} from 'context-guard';

// ---------------------------------------------------------------------------------------------
// A stand-in summarizer. A real one sends `instructions` as the system prompt and `prompt` as the
// user turn to a model. This one fills the seven-section template from the messages themselves,
// merging into `previousSummary` when there is one, so the example needs no network and prints
// the same bytes on every run.
// ---------------------------------------------------------------------------------------------
let summarizerCalls = 0;

function sectionsOf(summary: string | undefined): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of (summary ?? '').split('\n')) {
    if (line.startsWith('## ')) sections.set(line.slice(3), (current = []));
    else if (line.startsWith('- ') && line !== '- None.') current?.push(line.slice(2));
  }
  return sections;
}

/** The text of a tool result's output (JSON as JSON). */
const outputText = (output: ToolResultOutput): string =>
  !('value' in output) ? '' : typeof output.value === 'string' ? output.value : JSON.stringify(output.value);
const clip = (s: string, max = 90) => (s.length > max ? `${s.slice(0, max)}…` : s);
const firstSentence = (s: string) => clip(s.split(/\.\s+(?=[A-Z])/)[0] ?? s);

function summarizer({ messages, previousSummary }: SummarizerInput): string {
  summarizerCalls++;
  const previous = sectionsOf(previousSummary);
  const found = new Map<string, string[]>(SUMMARY_SECTIONS.map((s) => [s.title, []]));
  const add = (title: string, line: string) => found.get(title)?.push(line);
  // Files: one line per path, merged with the previous summary's ("src/date.ts: read, edited").
  const files = new Map<string, Set<string>>();
  for (const line of previous.get('Files') ?? []) {
    const at = line.lastIndexOf(': ');
    if (at > 0) files.set(line.slice(0, at), new Set(line.slice(at + 2).split(', ')));
  }
  const calls = new Map<string, number>(); // tool call id -> its line in Tool history
  let lastUser: string | undefined;
  let lastAssistant: string | undefined;
  for (const m of messages) {
    if (m.role === 'user' && typeof m.content === 'string') {
      add('User guidance', `"${clip(m.content)}"`);
      lastUser = m.content;
    }
    if (m.role === 'assistant' && Array.isArray(m.content)) {
      for (const p of m.content) {
        if (p.type === 'text') {
          add('Decisions', firstSentence(p.text));
          lastAssistant = p.text;
        }
        if (p.type === 'tool-call') {
          calls.set(p.toolCallId, found.get('Tool history')?.length ?? 0);
          add('Tool history', `${p.toolName} ${clip(JSON.stringify(p.input ?? {}), 60)}`);
          const path = (p.input as { path?: unknown } | undefined)?.path;
          if (typeof path === 'string')
            files.set(path, (files.get(path) ?? new Set()).add(p.toolName === 'read_file' ? 'read' : 'edited'));
        }
      }
    }
    // The summarizer gets the outputs as the tools returned them (clipped to 2,000 characters),
    // even those an earlier prune replaced by a placeholder; errors are never replaced.
    if (m.role === 'tool') {
      for (const p of m.content) {
        const value = outputText(p.output);
        const result = ` -> ${JSON.stringify(clip(value.split('\n')[0] ?? '', 32))}`;
        const line = calls.get(p.toolCallId);
        const history = found.get('Tool history') ?? [];
        if (line !== undefined && history[line] !== undefined) history[line] += result;
        else {
          // The call was in an earlier chunk: complete its line in the summary so far.
          const earlier = previous.get('Tool history') ?? [];
          const at = earlier.findLastIndex((l) => l.startsWith(`${p.toolName} `) && !l.includes(' -> '));
          if (at >= 0) earlier[at] += result;
        }
        if (p.output.type === 'error-text') add('Errors', clip(value.split('\n').slice(0, 2).join(' / '), 120));
      }
    }
  }
  for (const [path, ops] of files) add('Files', `${path}: ${[...ops].join(', ')}`);
  if (lastAssistant) add('Task state', `Last result: ${firstSentence(lastAssistant)}`);
  if (lastUser) add('Next steps', `Continue with: "${clip(lastUser)}"`);

  // Update, do not re-summarize: keep what the previous summary says, add what is new.
  return SUMMARY_SECTIONS.map((s) => {
    const next = found.get(s.title) ?? [];
    const replaced = s.title === 'Files' || ((s.title === 'Task state' || s.title === 'Next steps') && next.length > 0);
    const lines = [...new Set([...(replaced ? [] : (previous.get(s.title) ?? [])), ...next])];
    return `## ${s.title}\n${lines.length > 0 ? lines.map((l) => `- ${l}`).join('\n') : '- None.'}`;
  }).join('\n\n');
}

const guard = createContextGuard({
  contextWindow: 8_000,
  // Half the window (the default is a quarter), so that pruning alone is enough at call 1.
  target: 0.5,
  summarizer,
  onEvent: (e) => {
    if (e.type === 'summarizer-failed') console.log(`  summarizer failed: ${e.reason}`);
  },
});

// ---------------------------------------------------------------------------------------------
// The conversation: a system prompt, a first request, tool steps with large outputs, some chat.
// ---------------------------------------------------------------------------------------------
const tools = [
  {
    name: 'read_file',
    description: 'Read a file',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
  },
  {
    name: 'edit_file',
    description: 'Replace text in a file',
    inputSchema: {
      type: 'object',
      properties: { path: { type: 'string' }, old: { type: 'string' }, new: { type: 'string' } },
    },
  },
  { name: 'run_tests', description: 'Run the test suite', inputSchema: { type: 'object', properties: {} } },
];

/** A file's content: `lines` lines of plausible code. */
function source(name: string, lines: number): string {
  return Array.from(
    { length: lines },
    (_, i) => `export function ${name}${i}(input: string): number { return input.length + ${i}; }`,
  ).join('\n');
}

let step = 0;
function toolStep(toolName: string, input: Record<string, unknown>, output: string, error = false): GuardMessage[] {
  const toolCallId = `call-${++step}`;
  return [
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId, toolName, input }] },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId,
          toolName,
          output: error ? { type: 'error-text', value: output } : { type: 'text', value: output },
        },
      ],
    },
  ];
}

const say = (text: string): GuardMessage => ({ role: 'assistant', content: [{ type: 'text', text }] });

const ciLog = [
  'FAIL test/date.test.ts > parseIsoWeek > 2021-W01-1',
  "Error: expected '2021-01-04', received '2020-12-28'",
  '    at parseIsoWeek (src/date.ts:44:11)',
  'Tests: 3 failed, 9 passed, 12 total',
].join('\n');

const analysis =
  'parseIsoWeek() starts week 1 on the Monday of the week that holds January 1. ISO 8601 starts week 1 on the week that holds the first Thursday, ' +
  'so in years whose January 1 falls on a Friday, Saturday or Sunday every date is off by one week. ' +
  'The failing cases are exactly those years: 2021, 2022 and 2027 in the test table. ' +
  'The same offset is used by weekOf() in src/week.ts, which formatWeek() calls, so the fix belongs in one helper both can share. ';

let history: GuardMessage[] = [
  { role: 'system', content: 'You are a coding agent. Use the tools to read, edit and test code.' },
  {
    role: 'user',
    content: 'The date parser in src/date.ts fails on ISO week dates. Find the bug, fix it and run the tests.',
  },
  ...toolStep('read_file', { path: 'src/date.ts' }, source('parseDate', 60)),
  ...toolStep('read_file', { path: 'test/date.test.ts' }, source('testWeek', 36)),
  ...toolStep('read_file', { path: 'src/calendar.ts' }, source('calendarDay', 40)),
  ...toolStep('run_tests', {}, ciLog, true),
  say(analysis.repeat(8).trim()),
  {
    role: 'user',
    content: 'Keep the public API unchanged; do not touch src/index.ts. Fix the helper, not each caller.',
  },
  say(
    'Plan: 1. add isoWeekOne(year) to src/date.ts; 2. use it in parseIsoWeek(); 3. run the tests; 4. check weekOf() in src/week.ts. '
      .repeat(16)
      .trim(),
  ),
  ...toolStep('read_file', { path: 'src/week.ts' }, source('weekOf', 32)),
  ...toolStep(
    'edit_file',
    { path: 'src/date.ts', old: 'const jan1 = ', new: 'const jan4 = ' },
    'Edited src/date.ts (1 replacement).',
  ),
  ...toolStep('run_tests', {}, 'PASS test/date.test.ts (12 tests)'),
  say('Fixed: week 1 now follows the first-Thursday rule and all 12 tests pass.'),
  { role: 'user', content: 'Good. Now also accept week dates without dashes, like 2021W011.' },
];

// ---------------------------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------------------------
const n = (x: number) => Math.round(x).toLocaleString('en-US');

/** A message's text: its string content, or its text parts joined ('' when it has none). */
const textOf = (m: GuardMessage | undefined): string =>
  m === undefined
    ? ''
    : typeof m.content === 'string'
      ? m.content
      : m.content.map((p) => (p.type === 'text' ? p.text : '')).join('');

function describe(m: GuardMessage): string {
  if (typeof m.content === 'string')
    return `${n(m.content.length).padStart(5)} chars  ${JSON.stringify(clip(m.content, 44))}`;
  return m.content
    .map((p) => {
      if (p.type === 'text') return `${n(p.text.length).padStart(5)} chars  text`;
      if (p.type === 'tool-call') return `            call ${p.toolName}(${clip(JSON.stringify(p.input ?? {}), 40)})`;
      if (p.type === 'tool-result') {
        const value = outputText(p.output);
        const kind = value.startsWith('[Output of tool')
          ? 'placeholder'
          : / characters omitted[;.]/.test(value)
            ? 'truncated'
            : p.output.type;
        return `${n(value.length).padStart(5)} chars  ${p.toolName} result (${kind})`;
      }
      return p.type;
    })
    .join(', ');
}

function list(messages: readonly GuardMessage[], from = 0): void {
  for (let i = from; i < messages.length; i++)
    console.log(`  ${String(i).padStart(2)} ${messages[i]!.role.padEnd(9)} ${describe(messages[i]!)}`);
}

let shown = 0;
async function call(label: string, messages: GuardMessage[]): Promise<GuardMessage[]> {
  const r = await guard.beforeModel({ sessionId: 'demo', messages, tools });
  const c = r.compaction;
  console.log(`${shown > 0 ? '\n' : ''}=== ${label} ===`);
  console.log(
    `BEFORE: ${messages.length} messages${c ? `, ~${n(c.tokensBefore)} tokens (threshold ${n(r.threshold)})` : ''}`,
  );
  if (shown > 0) console.log(`   0-${shown - 1}  as in the previous call, then:`);
  list(messages, shown);
  shown = messages.length;
  if (!c) {
    console.log(
      `AFTER: no new compaction (r.compaction not set); ${r.messages.length} messages, ~${n(r.tokens)} tokens`,
    );
    return r.messages;
  }
  console.log(`AFTER: ${r.messages.length} messages, ~${n(r.tokens)} tokens`);
  list(r.messages);
  console.log(`r.compaction: reason=${c.reason} strategy=${c.strategy} steps=[${c.steps.join(', ')}]`);
  console.log(
    `  tokensBefore=${c.tokensBefore} tokensAfter=${c.tokensAfter} target=${c.target} messagesBefore=${c.messagesBefore} messagesAfter=${c.messagesAfter}`,
  );
  console.log(
    `  summarizedMessages=${c.summarizedMessages} splitTurn=${c.splitTurn} prunedToolResults=${c.prunedToolResults} truncatedToolResults=${c.truncatedToolResults}`,
  );
  console.log(
    `  summarizerCalls=${c.summarizerCalls} summarizerInputTokens=${c.summarizerInputTokens} summaryTokens=${c.summaryTokens} overflow=${c.overflow}`,
  );
  return r.messages;
}

// Call 1: over the threshold; truncating oversized outputs and replacing the oldest by placeholders
// reaches the target.
await call('call 1', history);

// Call 2: the agent explained, the user answered, three more files were read: placeholders would
// not reach the target, so the older part (and the start of the latest turn) is summarized.
history = [
  ...history,
  say(
    'To accept 2021W011 the pattern needs an optional dash between year and week and between week and day; parse.ts builds the pattern, format.ts prints it back. '
      .repeat(8)
      .trim(),
  ),
  { role: 'user', content: 'Yes, but reject mixed forms such as 2021W01-1: either both dashes or none.' },
  ...toolStep('read_file', { path: 'src/parse.ts' }, source('parseCompact', 28)),
  ...toolStep('read_file', { path: 'src/format.ts' }, source('formatWeek', 28)),
  ...toolStep('read_file', { path: 'src/iso.ts' }, source('isoYear', 28)),
];
const sent2 = await call('call 2', history);
const written = (opening: string) =>
  textOf(sent2.find((m) => m.role === 'user' && textOf(m).startsWith(opening))) || 'none';
console.log('\nThe summary message of call 2, as sent:\n');
console.log(written('[Context Summary]'));
console.log('\nThe continuation message after it:\n');
console.log(written('[Continue]'));

// Call 3: the host resends its whole history plus the model's next message.
history = [...history, say('Both forms will go through one regular expression in src/parse.ts.')];
const sent3 = await call('call 3', history);
const prefix = (ms: GuardMessage[]) => JSON.stringify(ms.slice(0, sent2.length));
console.log(
  `compacted prefix byte-identical to call 2: ${prefix(sent3) === prefix(sent2)}; summarizer calls in all: ${summarizerCalls}`,
);
