// Recognizing a provider's "prompt too long" rejection, and the prompt size it reports. Providers
// word it differently and client libraries wrap it differently (the AI SDK's APICallError with its
// `responseBody`, an AI SDK stream error part, the openai and Anthropic SDKs' APIError with the
// parsed body in `error`, LangChain's ContextOverflowError with the original as `cause`...), so the
// texts of an error are gathered from the fields these use, along its links to other errors.
//
// An error is untrusted input: it may be huge (a provider echoing the prompt), cyclic (a cause
// chain that loops), or hostile (throwing getters, revoked proxies). So the walk visits a bounded
// number of objects, each once; only a capped prefix of each text is read (providers put the
// reason first); every pattern starts with a literal and repeats only bounded classes, so matching
// is linear in what is read.

/** Characters read from each text. Providers' rejections say what they are in their first sentence. */
const SCAN_CHARS = 8_192;
/** Objects visited per error (the error, its causes, parsed bodies, nested errors). */
const MAX_OBJECTS = 32;
/** Entries read from an array of errors (AggregateError, a retry's `errors`). */
const MAX_ARRAY_ITEMS = 4;

/** Fields whose string value may carry the provider's words or code. */
const TEXT_FIELDS = [
  'message',
  'responseBody',
  'body',
  'error',
  'code',
  'type',
  'detail',
  'name',
  'lc_error_code',
] as const;
/** Fields that may link to another error or a parsed body. */
const LINK_FIELDS = ['error', 'data', 'body', 'response', 'cause', 'lastError', 'errors', 'originalError'] as const;

const CONTEXT_LENGTH_PATTERNS: readonly RegExp[] = [
  /maximum context length/i, // OpenAI, DeepSeek, OpenRouter, vLLM, Mistral
  /context[_ ]length[_ ]exceeded/i, // OpenAI and Groq error codes
  /context window/i, // OpenAI Responses: "Your input exceeds the context window of this model"; MiniMax
  /prompt is too long/i, // Anthropic
  /input length and `?max_tokens`? exceed context limit/i, // Anthropic, when max_tokens is what does not fit
  /tokens? > \d{1,12} maximum/i, // Anthropic: "210000 tokens > 200000 maximum"
  /input is too long/i, // Bedrock
  /too many (?:input |total )?tokens/i,
  /exceeds the maximum number of tokens/i, // Google
  /input token count is \d{1,12} but model only supports/i, // Google Vertex
  /maximum prompt length is \d{1,12}/i, // xAI
  /\binput_too_large\b/i, // xAI (gRPC)
  /reduce the length of the messages/i, // Groq, OpenAI
  /input tokens exceed the configured limit/i, // OpenAI
  /`?inputs`? tokens \+ `?max_new_tokens`? must be/i, // TGI, Hugging Face endpoints
  /exceeds the available context size/i, // llama.cpp server
  /\bexceed_context_size_error\b/, // llama.cpp server's error type
  /loaded with context length of only/i, // LM Studio
  /greater than the context length/i, // LM Studio
  /prompt token count of \d{1,12} exceeds the limit/i, // GitHub Copilot
  /exceeded model token limit/i, // Moonshot (Kimi)
  /^ContextOverflowError$|^CONTEXT_OVERFLOW$/, // LangChain's class name and error code
];

/**
 * Readers of the prompt's size, most specific first. Each returns what the provider counted for
 * the prompt itself (messages, tool definitions, media), never a total that includes the
 * completion (`max_tokens`), which the guard's estimate does not cover.
 */
const PROMPT_TOKEN_READERS: ReadonlyArray<(text: string) => number | undefined> = [
  // OpenAI: "your messages resulted in 12422 tokens (12308 in the messages, 114 in the functions)":
  // the total is the prompt's, tool definitions included.
  group(/resulted in (\d{1,12}) tokens/i),
  // OpenAI, DeepSeek, vLLM, OpenRouter: "you requested [about] N tokens (M in the messages, K in the
  // completion)": N counts the completion, so the prompt is the sum of the other shares.
  requestedShares,
  group(/prompt is too long: (\d{1,12}) tokens/i), // Anthropic
  group(/exceed context limit: (\d{1,12}) \+/i), // Anthropic: "input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000"
  group(/input token count \((\d{1,12})\)/i), // Google
  group(/input token count is (\d{1,12})/i), // Google Vertex
  group(/request contains (\d{1,12}) tokens/i), // xAI
  group(/current message \((\d{1,12}) tokens\)/i), // xAI (gRPC)
  group(/prompt contains (\d{1,12}) tokens/i), // Mistral
  group(/request has (\d{1,12}) input tokens/i), // vLLM
  group(/given: (\d{1,12}) `?inputs`? tokens/i), // TGI
  group(/prompt token count of (\d{1,12})/i), // GitHub Copilot
];

function group(pattern: RegExp): (text: string) => number | undefined {
  return (text) => {
    const match = pattern.exec(text);
    return match ? Number(match[1]) : undefined;
  };
}

/**
 * "(8600 in the messages, 500 in the completion)", "(139018 of text input, 3748 of tool input, 1000 in the output)".
 */
function requestedShares(text: string): number | undefined {
  const match = /requested (?:about )?\d{1,12} tokens \(([^()]{1,300})\)/i.exec(text);
  if (!match) return undefined;
  let prompt = 0;
  let found = false;
  for (const share of (match[1] as string).split(/[,;]/)) {
    const parsed = /^\s*(?:and )?(\d{1,12}) (?:in|of|for) (.{1,60})$/i.exec(share);
    if (!parsed) continue;
    if (/completion|output/i.test(parsed[2] as string)) continue;
    prompt += Number(parsed[1]);
    found = true;
  }
  return found ? prompt : undefined;
}

/** A field of an object that may be hostile (a throwing getter, a revoked proxy). */
function field(value: object, key: string): unknown {
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

function isArray(value: unknown): value is unknown[] {
  try {
    return Array.isArray(value);
  } catch {
    return false; // a revoked proxy
  }
}

/** The capped texts of an error and of the errors and bodies it links to, breadth first, each object once. */
function textsOf(error: unknown): string[] {
  const texts: string[] = [];
  const addText = (text: string) => void texts.push(text.length > SCAN_CHARS ? text.slice(0, SCAN_CHARS) : text);
  if (typeof error === 'string') {
    addText(error);
    return texts;
  }
  const seen = new Set<object>();
  const queue: object[] = [];
  const enqueue = (value: unknown) => {
    if (typeof value !== 'object' || value === null || seen.has(value) || seen.size >= MAX_OBJECTS) return;
    seen.add(value);
    queue.push(value);
  };
  enqueue(error);
  for (let i = 0; i < queue.length; i++) {
    const current = queue[i] as object;
    if (isArray(current)) {
      for (let j = 0; j < Math.min(MAX_ARRAY_ITEMS, current.length); j++) {
        const item = field(current, String(j));
        if (typeof item === 'string') addText(item);
        else enqueue(item);
      }
      continue;
    }
    for (const key of TEXT_FIELDS) {
      const value = field(current, key);
      if (typeof value === 'string' && value) addText(value);
    }
    for (const key of LINK_FIELDS) enqueue(field(current, key));
  }
  return texts;
}

/** "140,018" → "140018", so that counts with thousands separators read as one number. */
const withoutSeparators = (text: string) => text.replace(/(?<=\d),(?=\d{3}(?!\d))/g, '');

/** Whether a model call failed because its prompt was over the model's context window. */
export function isContextLengthError(error: unknown): boolean {
  return textsOf(error).some((text) => CONTEXT_LENGTH_PATTERNS.some((pattern) => pattern.test(text)));
}

/** The prompt's token count the provider reported in its rejection, when it did. */
export function promptTokensFromError(error: unknown): number | undefined {
  for (const text of textsOf(error)) {
    const plain = withoutSeparators(text);
    for (const read of PROMPT_TOKEN_READERS) {
      const tokens = read(plain);
      if (tokens !== undefined && Number.isSafeInteger(tokens) && tokens > 0) return tokens;
    }
  }
  return undefined;
}

/**
 * Readers of the limit a provider names in its rejection, each with what the same error says the
 * completion took of it (the prompt then has to fit the difference: OpenAI counts `max_tokens` into
 * "you requested", Anthropic into "input length and `max_tokens`"). Real wordings:
 *   OpenAI, Groq, DeepSeek, OpenRouter, vLLM: "This model's maximum context length is 8192 tokens.
 *     However, you requested 8203 tokens (7691 in the messages, 512 in the completion)." / "...your
 *     messages resulted in 204308 tokens"; older: "(3545 in your prompt; 1024 for the completion)"
 *   Anthropic: "prompt is too long: 202128 tokens > 200000 maximum"; "input length and `max_tokens`
 *     exceed context limit: 178959 + 64000 > 200000"
 *   Google: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)";
 *     Vertex: "input token count is 1200000 but model only supports up to 1048576"
 *   xAI: "This model's maximum prompt length is 131072 but the request contains 136973 tokens."
 *   Mistral: "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768
 *     maximum context length"
 *   llama.cpp: `{"error":{..."type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}`
 *   LM Studio: "...the model is loaded with context length of only 32768 tokens"
 *   TGI: "`inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 500
 *     `max_new_tokens`"
 *   Moonshot: "Your request exceeded model token limit: 262144"
 *   GitHub Copilot: "prompt token count of 140000 exceeds the limit of 128000"
 */
const LIMIT_READERS: ReadonlyArray<(text: string) => { limit: number; completion: number } | undefined> = [
  limitWith(/maximum context length is (\d{1,12}) tokens/i, /(\d{1,12}) (?:in|for) the (?:completion|output)/i),
  limitWith(
    /exceed context limit: \d{1,12} \+ \d{1,12} > (\d{1,12})/i,
    /exceed context limit: \d{1,12} \+ (\d{1,12}) >/i,
  ),
  limitWith(/tokens? > (\d{1,12}) maximum/i),
  limitWith(/maximum number of tokens allowed \((\d{1,12})\)/i),
  limitWith(/only supports up to (\d{1,12})/i),
  limitWith(/maximum prompt length is (\d{1,12})/i),
  limitWith(/too large for model with (\d{1,12}) maximum context length/i),
  limitWith(/"n_ctx"\s*:\s*(\d{1,12})/),
  limitWith(/context length of only (\d{1,12}) tokens/i),
  limitWith(/must be <= (\d{1,12})\. Given: \d{1,12} `?inputs`? tokens/i, /and (\d{1,12}) `?max_new_tokens`?/i),
  limitWith(/exceeded model token limit: (\d{1,12})/i),
  limitWith(/prompt token count of \d{1,12} exceeds the limit of (\d{1,12})/i),
];

function limitWith(
  limit: RegExp,
  completion?: RegExp,
): (text: string) => { limit: number; completion: number } | undefined {
  return (text) => {
    const match = limit.exec(text);
    if (!match) return undefined;
    const used = completion?.exec(text);
    return { limit: Number(match[1]), completion: used ? Number(used[1]) : 0 };
  };
}

/**
 * The largest prompt the provider says it takes, from a context-length rejection that names its
 * limit: the limit, less the completion the same error says it reserved. Undefined for any other
 * error, or a rejection that names no limit (OpenAI Responses' "Your input exceeds the context
 * window of this model", Bedrock's "Input is too long for requested model").
 */
export function windowFromError(error: unknown): number | undefined {
  const texts = textsOf(error);
  if (!texts.some((text) => CONTEXT_LENGTH_PATTERNS.some((pattern) => pattern.test(text)))) return undefined;
  for (const text of texts) {
    const plain = withoutSeparators(text);
    for (const read of LIMIT_READERS) {
      const found = read(plain);
      if (!found || !Number.isSafeInteger(found.limit) || found.limit <= 0) continue;
      const window =
        found.completion > 0 && found.completion < found.limit ? found.limit - found.completion : found.limit;
      return window;
    }
  }
  return undefined;
}
