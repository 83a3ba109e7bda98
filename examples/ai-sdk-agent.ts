// An AI SDK agent that reads this repository, guarded by context-guard: `npm run demo`.
//
// The agent gets three tools: `list_files` and `read_file` (real files of this repository, read
// with node:fs) and `compact_context` (context-guard's compactTool). Its model is wrapped in
// contextGuardMiddleware, so every step of the generateText tool loop is estimated and, when it is
// over the threshold, compacted before the model sees it.
//
// Offline by default: the model is a scripted MockLanguageModelV4 that reads files step by step,
// asks for one compaction itself, then answers. It reports usage like a provider (about 4
// characters per token of what it received) and, as the default summarizer is the wrapped model
// itself, it also answers the guard's summary requests. The window is 8,000 tokens, so the
// conversation is compacted several times.
//
// With OPENAI_API_KEY or ANTHROPIC_API_KEY set, the same agent runs on the real provider
// (OPENAI_MODEL / ANTHROPIC_MODEL choose the model; default gpt-4o-mini / claude-haiku-4-5) with the
// model's real window from the built-in registry. CONTEXT_WINDOW=16000 sets a smaller window, to see
// compaction on a real model too.
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
  LanguageModelV4Prompt,
} from '@ai-sdk/provider';
import { generateText, stepCountIs, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { resolveModelInfo } from 'context-guard';
import { compactTool, contextGuardMiddleware } from 'context-guard/ai-sdk';
import { z } from 'zod';
import { READ_LIMIT, repoFiles } from './repo-files.ts';
import { earlierFiles, filesSection } from './summary-budget.ts';

// ---------------------------------------------------------------------------------------------
// The repository the tools read: live for a real model, a snapshot of it for the scripted one (so
// that the offline output, shown in docs/ai-sdk.md, is the same on every run: see repo-files.ts).
// ---------------------------------------------------------------------------------------------
const offline = !process.env.OPENAI_API_KEY && !process.env.ANTHROPIC_API_KEY;
const repo = repoFiles(offline);
const n = (x: number) => Math.round(x).toLocaleString('en-US');

const repoTools = {
  list_files: tool({
    description: 'List the files under a directory of the repository (recursively), with their sizes.',
    inputSchema: z.object({
      dir: z.string().describe('A directory relative to the repository root, e.g. "src" or "."'),
    }),
    execute: async ({ dir }) => repo.list(dir),
  }),
  read_file: tool({
    description: `Read a text file of the repository: at most ${n(READ_LIMIT)} characters from \`offset\` (default 0).`,
    inputSchema: z.object({
      path: z.string().describe('A file path relative to the repository root, e.g. "src/guard.ts"'),
      offset: z.number().int().min(0).optional(),
    }),
    execute: async ({ path, offset = 0 }) => repo.read(path, offset),
  }),
};

// ---------------------------------------------------------------------------------------------
// The offline model: a script of tool calls, then an answer. It also writes the guard's summaries.
// ---------------------------------------------------------------------------------------------
type Step = { say: string; tool: keyof typeof repoTools | 'compact_context'; input: Record<string, unknown> };
const script: Step[] = [
  { say: 'Let me see how the project is laid out.', tool: 'list_files', input: { dir: 'src' } },
  { say: 'The README should describe the design.', tool: 'read_file', input: { path: 'README.md' } },
  { say: 'Now the public API.', tool: 'read_file', input: { path: 'src/index.ts' } },
  { say: 'createContextGuard is the orchestration; reading it.', tool: 'read_file', input: { path: 'src/guard.ts' } },
  { say: 'Continuing with guard.ts.', tool: 'read_file', input: { path: 'src/guard.ts', offset: 6_000 } },
  { say: 'The options and their defaults.', tool: 'read_file', input: { path: 'src/config.ts' } },
  { say: 'The heuristic behind every estimate.', tool: 'read_file', input: { path: 'src/tokens/heuristic.ts' } },
  { say: 'How the estimate is calibrated.', tool: 'read_file', input: { path: 'src/tokens/calibration.ts' } },
  { say: 'The compaction pipeline.', tool: 'read_file', input: { path: 'src/compaction/pipeline.ts' } },
  { say: 'Pruning, its first step.', tool: 'read_file', input: { path: 'src/compaction/prune.ts' } },
  { say: 'How summaries are written.', tool: 'read_file', input: { path: 'src/compaction/summarize.ts' } },
  { say: 'Where the summary goes in the prompt.', tool: 'read_file', input: { path: 'src/compaction/placement.ts' } },
  {
    say: 'The fallback when the summarizer fails.',
    tool: 'read_file',
    input: { path: 'src/compaction/mechanical.ts' },
  },
  {
    say: 'How a summary is re-applied when the SDK resends the history.',
    tool: 'read_file',
    input: { path: 'src/compaction/memo.ts' },
  },
  { say: 'The per-session state.', tool: 'read_file', input: { path: 'src/state/session.ts' } },
  { say: 'The message model everything works on.', tool: 'read_file', input: { path: 'src/messages.ts' } },
  {
    say: 'Where the window comes from when none is given.',
    tool: 'read_file',
    input: { path: 'src/tokens/windows.ts' },
  },
  {
    say: 'I know the core now; compacting before I move on to the adapters.',
    tool: 'compact_context',
    input: { focus: 'how the core estimates, decides and compacts' },
  },
  { say: 'On to the AI SDK adapter.', tool: 'list_files', input: { dir: 'adapters' } },
  { say: 'The middleware.', tool: 'read_file', input: { path: 'adapters/ai-sdk/middleware.ts' } },
  { say: 'How prompts are converted.', tool: 'read_file', input: { path: 'adapters/ai-sdk/convert.ts' } },
  { say: 'The compact tool I just used.', tool: 'read_file', input: { path: 'adapters/ai-sdk/compact-tool.ts' } },
  {
    say: 'What happens when a provider rejects a prompt as too long.',
    tool: 'read_file',
    input: { path: 'adapters/ai-sdk/overflow.ts' },
  },
  {
    say: 'Last, how the adapter tells conversations apart.',
    tool: 'read_file',
    input: { path: 'adapters/shared/session-id.ts' },
  },
];

const FINAL_ANSWER = [
  'context-guard puts a guard in front of every model call.',
  "- beforeModel (src/guard.ts) estimates the prompt: chars/4, calibrated by the provider's real counts (src/tokens/calibration.ts), anchored on the last real count.",
  '- Over the threshold (window - buffer, src/config.ts) it compacts (src/compaction/pipeline.ts): prune old tool outputs, summarize older turns, fall back to a mechanical digest, hard-fit.',
  "- afterModel records the provider's total input tokens, so the next estimate starts from a real count.",
  '- The AI SDK adapter (adapters/ai-sdk/middleware.ts) runs both hooks as a language-model middleware, converts V4 prompts to guard messages and back, and retries once, compacted, on a context-length error.',
].join('\n');

/** What a provider would count for this prompt: about 4 characters per token of everything sent. */
function providerTokens(prompt: LanguageModelV4Prompt, tools: LanguageModelV4CallOptions['tools']): number {
  let chars = JSON.stringify(tools ?? []).length;
  for (const message of prompt) {
    chars += 16; // the provider's own framing of each message
    if (typeof message.content === 'string') {
      chars += message.content.length;
      continue;
    }
    for (const part of message.content) {
      if (part.type === 'text' || part.type === 'reasoning') chars += part.text.length;
      else if (part.type === 'tool-call') chars += part.toolName.length + JSON.stringify(part.input ?? {}).length;
      else if (part.type === 'tool-result')
        chars += 'value' in part.output ? JSON.stringify(part.output.value).length : 0;
    }
  }
  return Math.ceil(chars / 4);
}

function result(
  content: LanguageModelV4Content[],
  inputTokens: number,
  finish: 'stop' | 'tool-calls',
): LanguageModelV4GenerateResult {
  const outputTokens = Math.ceil(JSON.stringify(content).length / 4);
  return {
    content,
    finishReason: { unified: finish, raw: finish === 'stop' ? 'stop' : 'tool_calls' },
    usage: {
      inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: outputTokens, text: outputTokens, reasoning: 0 },
    },
    warnings: [],
  };
}

/**
 * The mock's summary of a guard's summary request: a short structured note of the files read (each
 * with the first line of what was read), merged with the previous summary, in the guard's sections.
 */
function writeSummary(instructions: string, request: string): string {
  const files = new Map<string, string>();
  const previous = /<previous-summary>([\s\S]*?)<\/previous-summary>/.exec(request)?.[1] ?? '';
  for (const line of previous.split('\n')) {
    const m = /^- (\S+): (.*)$/.exec(line);
    if (m && /[./]/.test(m[1]!)) files.set(m[1]!, m[2]!);
  }
  const paths = new Map<string, string>(); // tool call id -> path
  for (const m of request.matchAll(/\[assistant tool call: read_file \(([^)]+)\)\] (\{.*\})/g)) {
    try {
      paths.set(m[1]!, (JSON.parse(m[2]!) as { path: string }).path);
    } catch {
      // an input the transcript clipped
    }
  }
  for (const m of request.matchAll(/\[tool result: read_file \(([^)]+)\)\]\n(.*)/g)) {
    const path = paths.get(m[1]!);
    if (path && !files.has(path)) files.set(path, m[2]!.replace(/^\/\/\s*|^#\s*/, '').slice(0, 90));
  }
  const focus = /Focus: give the most detail to "([^"]*)"/.exec(instructions)?.[1];
  const earlier = earlierFiles(previous);
  const rest = [
    '## Tool history',
    '- list_files and read_file on the repository; no failures.',
    '## Errors',
    '- None.',
    '## Decisions',
    '- Read the core (src/) first, then the adapters.',
    '## User guidance',
    '- "Explain the architecture, citing the files."',
    '## Next steps',
    '- Continue reading the remaining files, then write the overview.',
  ];
  const head = `- Explaining how context-guard works by reading its source; ${files.size + earlier} files read so far.${focus ? ` Focus: ${focus}.` : ''}`;
  const other = head.length + rest.join('\n').length + 40;
  return ['## Task state', head, '## Files', ...filesSection(files, earlier, other, instructions), ...rest].join('\n');
}

/**
 * Like a real agent, the mock writes down what it learned from the file it just read: its opening
 * comment and its exports. These notes stay in the conversation (pruning only shortens tool
 * outputs), so after a while only a summary can make room.
 */
function notesOn(prompt: LanguageModelV4Prompt): string | undefined {
  const last = prompt.at(-1);
  const part = last?.role === 'tool' ? last.content[0] : undefined;
  if (part?.type !== 'tool-result' || part.toolName !== 'read_file' || part.output.type !== 'text') return undefined;
  const comment = part.output.value
    .split('\n')
    .filter(
      (line, i, lines) =>
        /^\s*(\/\/|\*|\/\*\*)/.test(line) && lines.slice(0, i).every((l) => /^\s*(\/\/|\*|\/\*\*)/.test(l)),
    )
    .map((line) => line.replace(/^\s*(\/\/|\/\*\*|\*\/?)\s?/, '').replace(/\s*\*\/\s*$/, ''))
    .join(' ')
    .trim();
  const exports = [
    ...part.output.value.matchAll(/^export (?:async )?(?:function|const|class|interface|type) .*$/gm),
  ].map((m) => `- ${m[0].slice(7, 127)}`);
  const notes = [comment && `Notes: ${comment.slice(0, 800)}`, ...exports];
  return notes.some(Boolean) ? notes.filter(Boolean).join('\n') : undefined;
}

let scriptStep = 0;
/** The largest prompt the model received (its own count), to compare with the window. */
let largestPrompt = 0;
/** Prompts ending with the result of list_files or read_file, and those where it was sent whole. */
let latestResults = 0;
let latestWhole = 0;
const mock = new MockLanguageModelV4({
  provider: 'mock',
  modelId: 'scripted-agent',
  doGenerate: async ({ prompt, tools }) => {
    const tokens = providerTokens(prompt, tools);
    const first = prompt[0];
    // The guard's summary request: its instructions start "You write the working memory of an AI agent."
    if (first?.role === 'system' && first.content.includes('working memory')) {
      const request = prompt
        .flatMap((m) => (m.role === 'user' ? m.content : []))
        .map((p) => (p.type === 'text' ? p.text : ''))
        .join('\n');
      return result([{ type: 'text', text: writeSummary(first.content, request) }], tokens, 'stop');
    }
    largestPrompt = Math.max(largestPrompt, tokens);
    // Whether the file the model asked for last reached it whole (the guard may compact this prompt).
    const lastMessage = prompt.at(-1);
    const latest = lastMessage?.role === 'tool' ? lastMessage.content.at(-1) : undefined;
    if (latest?.type === 'tool-result' && latest.toolName !== 'compact_context') {
      latestResults++;
      if (latest.output.type === 'text' && latest.output.value === repo.last) latestWhole++;
    }
    const step = script[scriptStep++];
    if (!step) return result([{ type: 'text', text: FINAL_ANSWER }], tokens, 'stop');
    const notes = notesOn(prompt);
    return result(
      [
        { type: 'text', text: notes ? `${notes}\n\n${step.say}` : step.say },
        { type: 'tool-call', toolCallId: `call-${scriptStep}`, toolName: step.tool, input: JSON.stringify(step.input) },
      ],
      tokens,
      'tool-calls',
    );
  },
});

// ---------------------------------------------------------------------------------------------
// The model: the real provider when a key is set, else the mock.
// ---------------------------------------------------------------------------------------------
async function pickModel(): Promise<{ base: LanguageModelV4; label: string }> {
  if (process.env.OPENAI_API_KEY) {
    const { openai } = await import('@ai-sdk/openai');
    const id = process.env.OPENAI_MODEL ?? 'gpt-4o-mini';
    return { base: openai(id), label: `OpenAI ${id}` };
  }
  if (process.env.ANTHROPIC_API_KEY) {
    const { anthropic } = await import('@ai-sdk/anthropic');
    const id = process.env.ANTHROPIC_MODEL ?? 'claude-haiku-4-5';
    return { base: anthropic(id), label: `Anthropic ${id}` };
  }
  return { base: mock, label: 'scripted mock model (offline; set OPENAI_API_KEY or ANTHROPIC_API_KEY for a real one)' };
}

const { base, label } = await pickModel();
// The mock gets a small window so that compaction happens several times. A real model gets its own
// window from the built-in registry (the middleware passes model.modelId), unless CONTEXT_WINDOW says.
const contextWindow = Number(process.env.CONTEXT_WINDOW) || (offline ? 8_000 : undefined);

const k = (tokens: number) => `${(tokens / 1000).toFixed(1)}k`;
let compactions = 0;
let lastSummary: string | undefined;
const middleware = contextGuardMiddleware({
  ...(contextWindow ? { contextWindow } : {}),
  onEvent: (e) => {
    if (e.type === 'compaction-end') {
      compactions++;
      if (e.summary) lastSummary = e.summary;
      console.log(
        `  context compacted ${k(e.tokensBefore)} -> ${k(e.tokensAfter)} tokens (${e.strategy}${e.reason === 'manual' ? ', asked for by the model' : ''})`,
      );
    }
    if (e.type === 'summarizer-failed')
      console.log(`  summarizer failed (${e.reason}): the mechanical digest was used`);
    if (e.type === 'overflow') console.log('  overflow: only the system prompt and the request fit');
    if (e.type === 'config-error') console.log(`  ${e.message}`);
    if (e.type === 'error') console.log(`  context-guard error (${e.stage}):`, e.error);
  },
});
const model = wrapLanguageModel({ model: base, middleware });
const sessionId = 'repo-tour';

/** What a step did, in a few words. */
function describeStep(toolCalls: ReadonlyArray<{ toolName: string; input: unknown }>, text: string): string {
  if (toolCalls.length === 0) return `answer (${n(text.length)} characters)`;
  return toolCalls
    .map(({ toolName, input }) => {
      const i = (input ?? {}) as { path?: string; dir?: string; offset?: number; focus?: string };
      const arg = i.path
        ? `${i.path}${i.offset ? ` @${i.offset}` : ''}`
        : (i.dir ?? (i.focus ? JSON.stringify(i.focus) : ''));
      return `${toolName} ${arg}`.trim();
    })
    .join(', ');
}

console.log(`context-guard AI SDK demo: ${label}`);
console.log(repo.source);
const registryWindow = resolveModelInfo(base.modelId)?.contextWindow;
console.log(
  `context window: ${contextWindow ? `${n(contextWindow)} tokens` : registryWindow ? `${n(registryWindow)} tokens (${base.modelId}, from the built-in registry; CONTEXT_WINDOW=16000 to see compaction)` : `unknown for ${base.modelId}: set CONTEXT_WINDOW`}\n`,
);

const answer = await generateText({
  model,
  instructions:
    'You are a code-reading agent. Use list_files and read_file to study the repository, then answer. ' +
    'Call compact_context when you finish one part of the work and start another.',
  prompt:
    'Explain the architecture of context-guard: how an estimate, a compaction decision and a compaction happen. Cite the files.',
  tools: { ...repoTools, compact_context: compactTool(middleware) },
  stopWhen: stepCountIs(offline ? script.length + 2 : 30),
  providerOptions: { contextGuard: { sessionId } },
  onStepEnd: async (step) => {
    // status(): the provider's count of the prompt this step sent, recorded by the middleware.
    const status = await middleware.guard.status(sessionId);
    const ctx = status ? `${String(Math.round(status.fraction * 100)).padStart(3)}%` : '  ?%';
    console.log(`[ctx: ${ctx}] step ${step.stepNumber + 1}: ${describeStep(step.toolCalls, step.text)}`);
  },
});

console.log(`\n${answer.text}\n`);
console.log(`${answer.steps.length} steps, ${compactions} compactions.`);
if (offline) {
  const summarizerCalls = mock.doGenerateCalls.length - answer.steps.length;
  console.log(
    `Largest prompt the model received: ${n(largestPrompt)} tokens (window ${n(contextWindow ?? 0)}); summarizer calls: ${summarizerCalls}.\n` +
      `The file or listing the model had just asked for reached it whole in ${latestWhole} of ${latestResults} prompts.`,
  );
}
if (lastSummary) {
  const lines = lastSummary.split('\n');
  console.log(
    `\nThe latest summary (${lines.length} lines):\n${lines.slice(0, 14).join('\n')}${lines.length > 14 ? '\n...' : ''}`,
  );
}
