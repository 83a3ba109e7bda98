// A LangChain createAgent agent that reads this repository, guarded by context-guard:
// `npm run example:langchain`.
//
// The agent gets three tools: `list_files` and `read_file` (real files of this repository, read
// with node:fs) and `compact_context` (context-guard's compactTool). contextGuardMiddleware
// estimates every model call and, over the threshold, compacts the agent's state itself: the
// MemorySaver checkpoint of the thread then holds the compacted history (a summary and the recent
// messages), which the end of the run shows, and a follow-up turn on the same thread builds on it.
//
// Offline by default: the model is a scripted chat model (a small BaseChatModel defined below) that
// reads files step by step, asks for one compaction itself, then answers. It reports usage_metadata
// like a provider (about 4 characters per token of what it received, tool definitions included)
// and, as the default summarizer is the agent's own model, it also answers the guard's summary
// requests. The window is 8,000 tokens, so the conversation is compacted several times.
//
// With OPENAI_API_KEY or ANTHROPIC_API_KEY set, the same agent runs on the real provider
// (OPENAI_MODEL / ANTHROPIC_MODEL choose the model; default gpt-4o-mini / claude-haiku-4-5) with the
// model's window from its profile or the built-in registry. CONTEXT_WINDOW=16000 sets a smaller
// window, to see compaction on a real model too.
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import {
  BaseChatModel,
  type BaseChatModelCallOptions,
  type BindToolsInput,
} from '@langchain/core/language_models/chat_models';
import type { ChatResult } from '@langchain/core/outputs';
import type { Runnable } from '@langchain/core/runnables';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { MemorySaver } from '@langchain/langgraph';
import { resolveModelInfo } from 'context-guard';
import { compactTool, contextGuardMiddleware, SUMMARIZER_TAG } from 'context-guard/langchain';
import {
  AIMessage,
  createAgent,
  createMiddleware,
  HumanMessage,
  modelCallLimitMiddleware,
  SystemMessage,
  tool,
  ToolMessage,
  type AIMessageChunk,
  type BaseMessage,
} from 'langchain';
import { z } from 'zod';
import { READ_LIMIT, repoFiles } from './repo-files.ts';
import { earlierFiles, filesSection } from './summary-budget.ts';

// ---------------------------------------------------------------------------------------------
// The repository the tools read: live for a real model, a snapshot of it for the scripted one (so
// that the offline output, shown in docs/langchain.md, is the same on every run: see repo-files.ts).
// ---------------------------------------------------------------------------------------------
const offline = !process.env.OPENAI_API_KEY && !process.env.ANTHROPIC_API_KEY;
const repo = repoFiles(offline);
const n = (x: number) => Math.round(x).toLocaleString('en-US');

const listFiles = tool(async ({ dir }) => repo.list(dir), {
  name: 'list_files',
  description: 'List the files under a directory of the repository (recursively), with their sizes.',
  schema: z.object({ dir: z.string().describe('A directory relative to the repository root, e.g. "src" or "."') }),
});

const readFile = tool(async ({ path, offset = 0 }) => repo.read(path, offset), {
  name: 'read_file',
  description: `Read a text file of the repository: at most ${n(READ_LIMIT)} characters from \`offset\` (default 0).`,
  schema: z.object({
    path: z.string().describe('A file path relative to the repository root, e.g. "src/guard.ts"'),
    offset: z.number().int().min(0).optional(),
  }),
});

// ---------------------------------------------------------------------------------------------
// The offline model: a script of tool calls, then an answer. It also writes the guard's summaries.
// ---------------------------------------------------------------------------------------------
type Step = { say: string; tool: 'list_files' | 'read_file' | 'compact_context'; args: Record<string, unknown> };
const script: Step[] = [
  { say: 'Let me see how the project is laid out.', tool: 'list_files', args: { dir: 'src' } },
  { say: 'Now the public API.', tool: 'read_file', args: { path: 'src/index.ts' } },
  { say: 'createContextGuard is the orchestration; reading it.', tool: 'read_file', args: { path: 'src/guard.ts' } },
  { say: 'Continuing with guard.ts.', tool: 'read_file', args: { path: 'src/guard.ts', offset: 6_000 } },
  { say: 'The options and their defaults.', tool: 'read_file', args: { path: 'src/config.ts' } },
  { say: 'The heuristic behind every estimate.', tool: 'read_file', args: { path: 'src/tokens/heuristic.ts' } },
  { say: 'How the estimate is calibrated.', tool: 'read_file', args: { path: 'src/tokens/calibration.ts' } },
  { say: 'The compaction pipeline.', tool: 'read_file', args: { path: 'src/compaction/pipeline.ts' } },
  { say: 'Pruning, its first step.', tool: 'read_file', args: { path: 'src/compaction/prune.ts' } },
  { say: 'How summaries are written.', tool: 'read_file', args: { path: 'src/compaction/summarize.ts' } },
  { say: 'Where the summary goes in the prompt.', tool: 'read_file', args: { path: 'src/compaction/placement.ts' } },
  { say: 'The fallback when the summarizer fails.', tool: 'read_file', args: { path: 'src/compaction/mechanical.ts' } },
  { say: 'The per-session state.', tool: 'read_file', args: { path: 'src/state/session.ts' } },
  { say: 'The message model everything works on.', tool: 'read_file', args: { path: 'src/messages.ts' } },
  {
    say: 'Where the window comes from when none is given.',
    tool: 'read_file',
    args: { path: 'src/tokens/windows.ts' },
  },
  {
    say: 'I know the core now; compacting before I move on to the LangChain adapter.',
    tool: 'compact_context',
    args: { focus: 'how the core estimates, decides and compacts' },
  },
  { say: 'On to the LangChain adapter.', tool: 'list_files', args: { dir: 'adapters/langchain' } },
  { say: 'Its entry point.', tool: 'read_file', args: { path: 'adapters/langchain/index.ts' } },
  {
    say: 'The createAgent middleware this agent runs under.',
    tool: 'read_file',
    args: { path: 'adapters/langchain/agent-middleware.ts' },
  },
  {
    say: 'How BaseMessages become guard messages.',
    tool: 'read_file',
    args: { path: 'adapters/langchain/convert.ts' },
  },
  {
    say: 'The guarded chat model for hand-written loops.',
    tool: 'read_file',
    args: { path: 'adapters/langchain/with-context-guard.ts' },
  },
  {
    say: 'How real usage is recorded outside an agent.',
    tool: 'read_file',
    args: { path: 'adapters/langchain/callback-handler.ts' },
  },
  { say: 'Last, the summarizer helper.', tool: 'read_file', args: { path: 'adapters/langchain/summarizer.ts' } },
];

const FINAL_ANSWER = [
  'context-guard puts a guard in front of every model call.',
  "- beforeModel (src/guard.ts) estimates the prompt: chars/4, calibrated by the provider's real counts (src/tokens/calibration.ts), anchored on the last real count.",
  '- Over the threshold (window - buffer, src/config.ts) it compacts (src/compaction/pipeline.ts): prune old tool outputs, summarize older turns, fall back to a mechanical digest.',
  "- afterModel records the provider's total input tokens, so the next estimate starts from a real count.",
  "- In LangChain (adapters/langchain/agent-middleware.ts) the middleware rewrites the agent's state with the compacted history, fits each request with its system message and tools counted, and records usage_metadata after each call.",
].join('\n');

const FOLLOW_UP_ANSWER =
  'adapters/langchain/agent-middleware.ts: its beforeModel hook returns RemoveMessage(all) followed by the summary and the kept messages.';

/** Characters of a message as a provider would see them: its text, plus its tool calls. */
function messageChars(message: BaseMessage): number {
  const content = typeof message.content === 'string' ? message.content.length : JSON.stringify(message.content).length;
  const calls = AIMessage.isInstance(message) ? JSON.stringify(message.tool_calls ?? []).length : 0;
  return 16 + content + calls; // 16: the provider's own framing of each message
}

/** What a provider would count for this prompt: about 4 characters per token of everything sent. */
function providerTokens(messages: BaseMessage[], tools: BindToolsInput[] | undefined): number {
  const toolChars = JSON.stringify((tools ?? []).map((t) => convertToOpenAITool(t))).length;
  return Math.ceil((toolChars + messages.reduce((sum, m) => sum + messageChars(m), 0)) / 4);
}

/** Notes the runs started with the guard's summarizer tag: LangChain hands each run's tags to its handlers. */
class SummaryRunTracker extends BaseCallbackHandler {
  name = 'SummaryRunTracker';
  override awaitHandlers = true; // noted before the model's _generate runs
  readonly runIds = new Set<string>();

  override handleChatModelStart(
    _llm: unknown,
    _messages: BaseMessage[][],
    runId: string,
    _parentRunId?: string,
    _extra?: unknown,
    tags?: string[],
  ): void {
    if (tags?.includes(SUMMARIZER_TAG)) this.runIds.add(runId);
  }
}

/**
 * A summary request of the guard: its run is tagged `context-guard-summarizer`, and its
 * instructions (the system message) start "You write the working memory of an AI agent."
 */
function isSummaryRequest(messages: BaseMessage[], taggedRun: boolean): boolean {
  if (taggedRun) return true;
  const first = messages[0];
  return first !== undefined && SystemMessage.isInstance(first) && first.text.includes('working memory');
}

/**
 * The scripted summary of a guard's summary request: a short note of the files read (each with the
 * first line of what was read), merged with the previous summary, in the guard's seven sections.
 */
function writeSummary(instructions: string, request: string): string {
  const files = new Map<string, string>();
  const previous = /<previous-summary>([\s\S]*?)<\/previous-summary>/.exec(request)?.[1] ?? '';
  for (const line of previous.split('\n')) {
    const m = /^- (\S+): (.*)$/.exec(line);
    if (m && /[./]/.test(m[1]!)) files.set(m[1]!, m[2]!);
  }
  // The transcript's blocks ("[assistant]", "[assistant tool call: ...]", "[tool result: ...]"),
  // in order: each file gets the first line of what was read, or, when the guard pruned that output
  // already, the notes the agent wrote right after reading it.
  const paths = new Map<string, string>(); // tool call id -> path
  let pending: string | undefined; // a file whose output was pruned, waiting for the agent's notes
  for (const block of request.split('\n\n')) {
    const call = /^\[assistant tool call: read_file \(([^)]+)\)\] (\{.*\})/.exec(block);
    const result = /^\[tool result: read_file \(([^)]+)\)\]\n(.*)/.exec(block);
    const notes = /^\[assistant\]\nNotes: (.*)/.exec(block);
    if (call) {
      try {
        paths.set(call[1]!, (JSON.parse(call[2]!) as { path: string }).path);
      } catch {
        // an input the transcript clipped
      }
    } else if (result) {
      const path = paths.get(result[1]!);
      pending = undefined;
      if (!path || files.has(path)) continue;
      if (result[2]!.startsWith('[Output of tool')) pending = path;
      else files.set(path, result[2]!.replace(/^\/\/\s*|^#\s*/, '').slice(0, 90));
    } else if (notes && pending) {
      files.set(pending, notes[1]!.slice(0, 90));
      pending = undefined;
    }
  }
  const focus = /Focus: give the most detail to "([^"]*)"/.exec(instructions)?.[1];
  const earlier = earlierFiles(previous);
  const rest = [
    '## Tool history',
    '- list_files and read_file on the repository; no failures.',
    '## Errors',
    '- None.',
    '## Decisions',
    '- Read the core (src/) first, then the LangChain adapter.',
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
 * Like a real agent, the model writes down what it learned from the file it just read: its opening
 * comment and its exports. These notes stay in the conversation (pruning only shortens tool
 * outputs), so after a while only a summary can make room.
 */
function notesOn(messages: BaseMessage[]): string | undefined {
  const last = messages.at(-1);
  if (!last || !ToolMessage.isInstance(last) || last.name !== 'read_file' || typeof last.content !== 'string')
    return undefined;
  const comment = last.content
    .split('\n')
    .filter(
      (line, i, lines) =>
        /^\s*(\/\/|\*|\/\*\*)/.test(line) && lines.slice(0, i).every((l) => /^\s*(\/\/|\*|\/\*\*)/.test(l)),
    )
    .map((line) => line.replace(/^\s*(\/\/|\/\*\*|\*\/?)\s?/, '').replace(/\s*\*\/\s*$/, ''))
    .join(' ')
    .trim();
  const exports = [...last.content.matchAll(/^export (?:async )?(?:function|const|class|interface|type) .*$/gm)].map(
    (m) => `- ${m[0].slice(7, 127)}`,
  );
  const notes = [comment && `Notes: ${comment.slice(0, 800)}`, ...exports];
  return notes.some(Boolean) ? notes.filter(Boolean).join('\n') : undefined;
}

type ScriptedCallOptions = BaseChatModelCallOptions & { tools?: BindToolsInput[] };

/** The offline chat model: tool calls from the script, usage_metadata like a provider's. */
class ScriptedChatModel extends BaseChatModel<ScriptedCallOptions> {
  /** The model's name, as provider integrations expose it. */
  model = 'scripted-agent';
  step = 0;
  summaryRequests = 0;
  /** The largest prompt the model received (its own count), to compare with the window. */
  largestPrompt = 0;
  /** Prompts ending with the result of list_files or read_file, and those where it was sent whole. */
  latestResults = 0;
  latestWhole = 0;
  private readonly summaryRuns = new SummaryRunTracker();

  constructor() {
    super({});
    this.callbacks = [this.summaryRuns];
  }

  _llmType(): string {
    return 'scripted';
  }

  // createAgent binds the agent's tools; they are the call's `tools` option.
  override bindTools(
    tools: BindToolsInput[],
    kwargs?: Partial<ScriptedCallOptions>,
  ): Runnable<BaseLanguageModelInput, AIMessageChunk, ScriptedCallOptions> {
    return this.withConfig({ ...kwargs, tools });
  }

  async _generate(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): Promise<ChatResult> {
    const inputTokens = providerTokens(messages, options.tools);
    const reply = this.reply(messages, runManager, inputTokens);
    const outputTokens = Math.ceil((reply.text.length + JSON.stringify(reply.tool_calls ?? []).length) / 4);
    const message = new AIMessage({
      content: reply.content,
      tool_calls: reply.tool_calls ?? [],
      usage_metadata: {
        input_tokens: inputTokens,
        output_tokens: outputTokens,
        total_tokens: inputTokens + outputTokens,
      },
      response_metadata: { model_name: this.model, finish_reason: reply.tool_calls?.length ? 'tool_calls' : 'stop' },
    });
    return { generations: [{ text: message.text, message }] };
  }

  private reply(
    messages: BaseMessage[],
    runManager: CallbackManagerForLLMRun | undefined,
    inputTokens: number,
  ): AIMessage {
    if (isSummaryRequest(messages, runManager !== undefined && this.summaryRuns.runIds.delete(runManager.runId))) {
      this.summaryRequests++;
      return new AIMessage(
        writeSummary(
          messages[0]?.text ?? '',
          messages
            .slice(1)
            .map((m) => m.text)
            .join('\n'),
        ),
      );
    }
    this.largestPrompt = Math.max(this.largestPrompt, inputTokens);
    // Whether the file the model asked for last reached it whole (the guard may compact this prompt).
    const latest = messages.at(-1);
    if (latest && ToolMessage.isInstance(latest) && latest.name !== 'compact_context') {
      this.latestResults++;
      if (latest.content === repo.last) this.latestWhole++;
    }
    const step = script[this.step];
    if (!step) return new AIMessage(HumanMessage.isInstance(messages.at(-1)) ? FOLLOW_UP_ANSWER : FINAL_ANSWER);
    this.step++;
    const notes = notesOn(messages);
    return new AIMessage({
      content: notes ? `${notes}\n\n${step.say}` : step.say,
      tool_calls: [{ id: `call_${this.step}`, name: step.tool, args: step.args, type: 'tool_call' }],
    });
  }
}

// ---------------------------------------------------------------------------------------------
// The model: the real provider when a key is set, else the scripted one.
// ---------------------------------------------------------------------------------------------
async function pickModel(): Promise<{ model: BaseChatModel; id: string; label: string }> {
  if (process.env.OPENAI_API_KEY) {
    const { ChatOpenAI } = await import('@langchain/openai');
    const id = process.env.OPENAI_MODEL ?? 'gpt-4o-mini';
    return { model: new ChatOpenAI({ model: id }), id, label: `OpenAI ${id}` };
  }
  if (process.env.ANTHROPIC_API_KEY) {
    const { ChatAnthropic } = await import('@langchain/anthropic');
    const id = process.env.ANTHROPIC_MODEL ?? 'claude-haiku-4-5';
    return { model: new ChatAnthropic({ model: id }), id, label: `Anthropic ${id}` };
  }
  return {
    model: new ScriptedChatModel(),
    id: 'scripted-agent',
    label: 'scripted chat model (offline; set OPENAI_API_KEY or ANTHROPIC_API_KEY for a real one)',
  };
}

const { model, id, label } = await pickModel();
const scripted = model instanceof ScriptedChatModel ? model : undefined;
// The scripted model gets a small window so that compaction happens several times. A real model
// gets its own window (its profile's maxInputTokens, else the registry), unless CONTEXT_WINDOW says.
const contextWindow = Number(process.env.CONTEXT_WINDOW) || (scripted ? 8_000 : undefined);

const k = (tokens: number) => `${(tokens / 1000).toFixed(1)}k`;
let compactions = 0;
const guarded = contextGuardMiddleware({
  ...(contextWindow ? { contextWindow } : {}),
  onEvent: (e) => {
    if (e.type === 'compaction-end') {
      compactions++;
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
const threadId = 'repo-tour';

/** What a model call did, in a few words. */
function describe(message: AIMessage): string {
  const calls = message.tool_calls ?? [];
  if (calls.length === 0) return `answer (${n(message.text.length)} characters)`;
  return calls
    .map(({ name, args }) => {
      const a = args as { path?: string; dir?: string; offset?: number; focus?: string };
      const arg = a.path
        ? `${a.path}${a.offset ? ` @${a.offset}` : ''}`
        : (a.dir ?? (a.focus ? JSON.stringify(a.focus) : ''));
      return `${name} ${arg}`.trim();
    })
    .join(', ');
}

// One line per model call: the provider's count of the prompt it received, as a share of the window.
let modelCalls = 0;
let producedMessages = 0; // every message the conversation produced, compacted or not
const statusLine = createMiddleware({
  name: 'StatusLine',
  afterModel: async (state) => {
    const last = state.messages.at(-1);
    if (!last || !AIMessage.isInstance(last)) return;
    modelCalls++;
    producedMessages += 1 + (last.tool_calls?.length ?? 0);
    const status = await guarded.guard.status(threadId);
    const input = last.usage_metadata?.input_tokens;
    const fraction = status && input !== undefined ? input / status.contextWindow : status?.fraction;
    const ctx = fraction === undefined ? '  ?%' : `${String(Math.round(fraction * 100)).padStart(3)}%`;
    console.log(`[ctx: ${ctx}] step ${modelCalls}: ${describe(last)}`);
  },
});

const checkpointer = new MemorySaver();
const agent = createAgent({
  model,
  tools: [listFiles, readFile, compactTool(guarded)],
  systemPrompt:
    'You are a code-reading agent. Use list_files and read_file to study the repository, then answer. ' +
    'Call compact_context when you finish one part of the work and start another.',
  middleware: [
    guarded,
    statusLine,
    modelCallLimitMiddleware({ runLimit: scripted ? script.length + 2 : 30, exitBehavior: 'end' }),
  ],
  checkpointer,
});
const config = { configurable: { thread_id: threadId }, recursionLimit: 500 };

console.log(`context-guard LangChain demo: ${label}`);
console.log(repo.source);
const knownWindow = model.profile?.maxInputTokens ?? resolveModelInfo(id)?.contextWindow;
console.log(
  `context window: ${contextWindow ? `${n(contextWindow)} tokens` : knownWindow ? `${n(knownWindow)} tokens (${id}; CONTEXT_WINDOW=16000 to see compaction)` : `unknown for ${id}: set CONTEXT_WINDOW`}\n`,
);

const result = await agent.invoke(
  {
    messages: [
      new HumanMessage(
        'Explain the architecture of context-guard: how an estimate, a compaction decision and a compaction happen. Cite the files.',
      ),
    ],
  },
  config,
);
producedMessages += 1; // the user's request

console.log(`\n${result.messages.at(-1)?.text ?? ''}\n`);
console.log(`${modelCalls} model calls, ${compactions} compactions.`);
if (scripted) {
  console.log(
    `Largest prompt the model received: ${n(scripted.largestPrompt)} tokens (window ${n(contextWindow ?? 0)}); summarizer calls: ${scripted.summaryRequests}.\n` +
      `The file or listing the model had just asked for reached it whole in ${scripted.latestWhole} of ${scripted.latestResults} prompts.`,
  );
}

// The thread's checkpoint holds what the model saw: the compacted history, not the whole conversation.
const snapshot = await agent.graph.getState(config);
const stored = (snapshot.values as { messages: BaseMessage[] }).messages;
console.log(
  `\nThe checkpoint of thread "${threadId}" holds ${stored.length} messages (the conversation produced ${producedMessages}).`,
);
const summary = stored.find((m) => HumanMessage.isInstance(m) && m.text.startsWith('[Context Summary]'));
if (summary) {
  const lines = summary.text.split('\n');
  console.log(
    `Its summary message (${lines.length} lines) begins:\n${lines
      .slice(0, 10)
      .map((l) => `  ${l}`)
      .join('\n')}\n  ...`,
  );
}

// A later turn of the same thread starts from the checkpoint: the compacted history and the question.
console.log('\nFollow-up on the same thread:');
const followUp = await agent.invoke(
  { messages: [new HumanMessage('Which file shows how the createAgent middleware rewrites the state?')] },
  config,
);
console.log(followUp.messages.at(-1)?.text ?? '');
