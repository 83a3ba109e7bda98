// Recognizing a provider's "prompt too long" rejection, and the token count it reports. Providers
// word it differently; these patterns cover OpenAI (and the many OpenAI-compatible APIs: DeepSeek,
// Groq, OpenRouter, Together), Anthropic, Google, Mistral and Bedrock. Checked on the error's
// message and, for an AI SDK APICallError, its response body.

const CONTEXT_LENGTH_PATTERNS: readonly RegExp[] = [
  /maximum context length/i, // OpenAI, DeepSeek, OpenRouter, vLLM
  /context[_ ]length[_ ]exceeded/i, // OpenAI and Groq error codes
  /context window/i, // "exceeds the context window"
  /prompt is too long/i, // Anthropic
  /input is too long/i, // Bedrock
  /too many (input )?tokens/i,
  /input token count .* exceeds the maximum/i, // Google
  /exceeds the maximum number of tokens/i, // Google
  /too large for model with \d+ maximum context length/i, // Mistral
  /reduce the length of the messages/i, // Groq, OpenAI
  /tokens? > \d+ maximum/i, // Anthropic: "210000 tokens > 200000 maximum"
];

/** Patterns whose first group is the prompt's token count as the provider measured it. */
const PROMPT_TOKENS_PATTERNS: readonly RegExp[] = [
  /resulted in (\d+) tokens/i, // OpenAI: "However, your messages resulted in 130000 tokens"
  /you requested about (\d+) tokens/i, // OpenRouter
  /requested (\d+) tokens/i, // OpenAI: "However, you requested 130000 tokens (128000 in the messages, ...)"
  /(\d+) in the messages/i, // OpenAI, more precise than the total when present
  /prompt is too long: (\d+) tokens/i, // Anthropic
  /input token count \(?(\d+)\)?/i, // Google
  /prompt contains (\d+) tokens/i, // Mistral
];

function textsOf(error: unknown): string[] {
  if (typeof error !== 'object' || error === null) return typeof error === 'string' ? [error] : [];
  const e = error as { message?: unknown; responseBody?: unknown; cause?: unknown };
  const texts = [e.message, e.responseBody].filter((t): t is string => typeof t === 'string');
  if (e.cause && e.cause !== error) texts.push(...textsOf(e.cause));
  return texts;
}

/** Whether a model call failed because its prompt was over the model's context window. */
export function isContextLengthError(error: unknown): boolean {
  return textsOf(error).some((text) => CONTEXT_LENGTH_PATTERNS.some((p) => p.test(text)));
}

/** The prompt's token count the provider reported in its rejection, when it did. */
export function promptTokensFromError(error: unknown): number | undefined {
  for (const text of textsOf(error)) {
    const plain = text.replace(/(\d),(\d{3})/g, '$1$2');
    // The most specific pattern wins: OpenAI reports the messages' share apart from the completion.
    const inMessages = /(\d+) in the messages/i.exec(plain);
    if (inMessages) return Number(inMessages[1]);
    for (const pattern of PROMPT_TOKENS_PATTERNS) {
      const match = pattern.exec(plain);
      if (match) return Number(match[1]);
    }
  }
  return undefined;
}
