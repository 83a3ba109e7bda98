// A fake model provider on the wire, for the tests that drive the real provider packages
// (@ai-sdk/openai, @ai-sdk/anthropic, @ai-sdk/google, @langchain/openai, @langchain/anthropic).
// Each package is given `fetch` from here instead of the network. The fake plays the provider:
//   - it reads each request body in the provider's own format (a dialect: openai.ts, anthropic.ts,
//     google.ts), expands references to what it stored earlier (OpenAI Responses `item_reference`),
//     and counts its tokens by one fixed rule (characters of the request's JSON / 4: messages,
//     system prompt and tool definitions), as a provider bills them;
//   - it rejects what the provider rejects, with the provider's status code and error body: a prompt
//     over its window, a tool call without its result or a result without its call, a reference to
//     an item it does not have, a signature that does not sign what it is on;
//   - it answers the rest from a per-test script, in JSON or SSE (what the request asked for), with
//     usage split into cached and uncached input the way the provider reports it;
//   - it records every request and what it answered, for the tests to check.
// Everything is deterministic: ids count up, and the cached share is the prefix the request has
// in common with the previous one.

/** One scripted answer of the agent: tool calls (the framework runs them and calls again) or text. */
export interface Turn {
  reasoning?: string;
  text?: string;
  calls?: Array<{ name: string; args: Record<string, unknown> }>;
}

/** What the provider reported for an answered request. */
export interface ReportedUsage {
  /** Every input token of the prompt, cached or not: what the guard must record. */
  total: number;
  /** Of which read from the provider's prompt cache. */
  cached: number;
  /** Of which written to the cache (Anthropic). */
  cacheWrite: number;
  output: number;
}

export type Rejection = 'context-length' | 'pairing' | 'reference' | 'signature' | 'prefill';

/** One request the fake received. */
export interface WireCall {
  index: number;
  url: string;
  body: Record<string, unknown>;
  stream: boolean;
  /** A call of the guard's summarizer (its system prompt), not of the agent. */
  summarizer: boolean;
  /** The fake's own count of the request, references expanded. */
  tokens: number;
  /** The texts of the request's user messages, in order (tool results are not user messages). */
  userTexts: string[];
  /** Ids of stored items the request referenced instead of sending them. */
  references: string[];
  status: number;
  rejection?: Rejection;
  error?: string;
  usage?: ReportedUsage;
  /** What the provider answered. */
  reply?: Turn;
}

/** What a dialect reads from a request body. */
export interface ReadRequest {
  /** What the provider counts: the JSON of everything it bills (references expanded). */
  counted: unknown;
  /** The system prompt (or instructions), joined. */
  system: string;
  /** The texts of the user messages, in order (tool results are not user messages). */
  userTexts: string[];
  references: string[];
  /** What the provider would reject, as its own error (status and message), in the order it checks. */
  problems: Array<{ rejection: Rejection; status: number; message: string; param?: string }>;
  stream: boolean;
}

/** What a dialect's answer may use: the request, the provider's ids, its store of items. */
export interface AnswerContext {
  body: Record<string, unknown>;
  stream: boolean;
  ids: Ids;
  store: Map<string, unknown>;
}

/** A provider's wire format. */
export interface Dialect {
  name: string;
  /** Reads a request; `store` holds the items answered earlier (for references). */
  read(url: string, body: Record<string, unknown>, store: ReadonlyMap<string, unknown>): ReadRequest;
  /** The provider's error response. */
  error(problem: { rejection: Rejection; status: number; message: string; param?: string }): Response;
  /**
   * The provider's context-length error for a prompt of `tokens` over `window` (`tools`: tokens of the tool
   * definitions).
   */
  contextLength(tokens: number, window: number, tools: number): { status: number; message: string; param?: string };
  /** The answer for a turn, as JSON or SSE; items it makes are put in `store` (OpenAI Responses stores its output). */
  answer(turn: Turn, usage: ReportedUsage, request: AnswerContext): Response;
}

/** Counters for the ids a provider hands out. */
export class Ids {
  private n = 0;
  next(prefix: string): string {
    return `${prefix}${String(++this.n).padStart(4, '0')}`;
  }
}

/** The fake's token rule: characters of the JSON / 4. */
export function countTokens(value: unknown): number {
  return Math.ceil(JSON.stringify(value ?? null).length / 4);
}

/** The system prompt of the guard's default summarizer (src/compaction/prompt.ts). */
export const SUMMARIZER_MARK = 'You write the working memory';

/**
 * A signature over a text (what Anthropic's thinking signatures and Google's thought signatures sign): a short hash.
 */
export function sign(text: string): string {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0;
  return `sig_${h.toString(36)}_${text.length}`;
}

/** A JSON response. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

/** An SSE response of `events` (each `{ event?, data }`), sent as one chunk per event. */
export function sse(events: Array<{ event?: string; data: unknown }>): Response {
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const e of events) {
        const data = typeof e.data === 'string' ? e.data : JSON.stringify(e.data);
        controller.enqueue(encoder.encode(`${e.event ? `event: ${e.event}\n` : ''}data: ${data}\n\n`));
      }
      controller.close();
    },
  });
  return new Response(stream, { status: 200, headers: { 'content-type': 'text/event-stream' } });
}

/** Characters at the start of `a` and `b` that are the same. */
function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

export interface FakeOptions {
  /** The provider's real window, by its own count. */
  window: number;
  /** The agent's answer to its `agentIndex`-th accepted call. */
  reply: (call: WireCall, agentIndex: number) => Turn;
}

/** The summarizer's answer. */
const SUMMARY =
  '## Task state\nReading the project files one by one.\n## Files\nsrc/file-*.ts (read)\n## Next steps\nRead the next file, then answer.';

/** The fake provider: give `fake.fetch` to the provider package. */
export class FakeProvider {
  readonly calls: WireCall[] = [];
  /** Items the provider stored (OpenAI Responses output items), by id. */
  readonly store = new Map<string, unknown>();
  private readonly ids = new Ids();
  private previous = '';
  private agentIndex = 0;

  readonly dialect: Dialect;
  readonly host: string;
  readonly options: FakeOptions;

  constructor(dialect: Dialect, host: string, options: FakeOptions) {
    this.dialect = dialect;
    this.host = host;
    this.options = options;
  }

  /** The `fetch` a provider package is given: only this provider's host answers. */
  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (new URL(url).host !== this.host) throw new Error(`fake ${this.dialect.name}: unexpected host in ${url}`);
    const rawBody = init?.body ?? (input instanceof Request ? await input.text() : undefined);
    const body = JSON.parse(
      typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody as Uint8Array),
    ) as Record<string, unknown>;
    return this.handle(url, body);
  };

  /** The agent's calls (not the summarizer's). */
  agentCalls(): WireCall[] {
    return this.calls.filter((c) => !c.summarizer);
  }

  private handle(url: string, body: Record<string, unknown>): Response {
    const read = this.dialect.read(url, body, this.store);
    const tokens = countTokens(read.counted);
    const call: WireCall = {
      index: this.calls.length,
      url,
      body,
      stream: read.stream,
      summarizer: read.system.includes(SUMMARIZER_MARK),
      tokens,
      userTexts: read.userTexts,
      references: read.references,
      status: 200,
    };
    this.calls.push(call);
    const toolTokens = countTokens((read.counted as { tools?: unknown })?.tools ?? []);
    const problem =
      tokens > this.options.window
        ? {
            rejection: 'context-length' as const,
            ...this.dialect.contextLength(tokens, this.options.window, toolTokens),
          }
        : read.problems[0];
    if (problem) {
      call.status = problem.status;
      call.rejection = problem.rejection;
      call.error = problem.message;
      return this.dialect.error(problem);
    }
    const text = JSON.stringify(read.counted);
    const cachedChars = call.summarizer ? 0 : commonPrefix(text, this.previous);
    if (!call.summarizer) this.previous = text;
    // Caches work in blocks: the cached share is a multiple of 64 tokens, never the whole prompt.
    const cached = Math.min(Math.floor(cachedChars / 4 / 64) * 64, Math.max(0, tokens - 64));
    const turn = call.summarizer ? { text: SUMMARY } : this.options.reply(call, this.agentIndex++);
    call.reply = turn;
    const output = countTokens(turn);
    // Half of what is not read from the cache is written to it (providers that report writes apart).
    const cacheWrite = Math.floor((tokens - cached) / 2);
    call.usage = { total: tokens, cached, cacheWrite, output };
    return this.dialect.answer(turn, call.usage, { body, stream: read.stream, ids: this.ids, store: this.store });
  }
}
