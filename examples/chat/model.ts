// The chat example's model: a real provider when its API key is set, else a scripted mock model
// that plays one offline. The mock answers every question at length (about 3,000 characters), so
// that the conversation grows by a few hundred tokens per message and, in the example's 6,000-token
// window, the guard compacts it within about ten messages. It reports usage like a provider (about
// four characters per token of what it received and wrote) and answers the guard's summary requests
// (the default summarizer is the wrapped model itself) with a short summary of the questions asked.
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';

const TOPICS = [
  'the data model',
  'the API routes',
  'authentication',
  'the job queue',
  'caching',
  'observability',
  'the deployment',
  'error handling',
  'the test plan',
  'the migration',
];

/** The text of a prompt's messages of one role. */
function textsOf(prompt: LanguageModelV4CallOptions['prompt'], role: string): string[] {
  const out: string[] = [];
  for (const message of prompt) {
    if (message.role !== role) continue;
    if (typeof message.content === 'string') out.push(message.content);
    else for (const part of message.content) if (part.type === 'text') out.push(part.text);
  }
  return out;
}

/** A long, structured answer to the latest question: what grows the conversation. */
function answerTo(question: string, turn: number): string {
  const topic = TOPICS[turn % TOPICS.length]!;
  const lines = [`You asked: "${question.slice(0, 120)}". Here is a plan for ${topic} (step ${turn + 1}).`, ''];
  for (let i = 1; lines.join('\n').length < 3_000; i++) {
    lines.push(
      `${i}. For ${topic}, decide what ${['reads', 'writes', 'retries', 'logs', 'limits'][i % 5]} happen at step ${i}, ` +
        `keep the contract in a small module of its own, and write the test that proves it before the code.`,
    );
  }
  lines.push('', 'Ask for the next part when you are ready.');
  return lines.join('\n');
}

/** What the guard's summary request gets: the questions so far, one line each. */
function summaryOf(prompt: LanguageModelV4CallOptions['prompt']): string {
  const transcript = textsOf(prompt, 'user').join('\n');
  const asked = [...transcript.matchAll(/You asked: "([^"]*)"/g)].map((m) => m[1]);
  return [
    '## Task state',
    `Planning a web service with the user, one part per question (${asked.length} answered so far).`,
    '## User guidance',
    ...asked.slice(-6).map((q) => `- asked: ${q}`),
    '## Next steps',
    'Answer the next question in the same structure.',
  ].join('\n');
}

const tokens = (chars: number) => Math.ceil(chars / 4);
const promptChars = (options: LanguageModelV4CallOptions) => JSON.stringify(options.prompt).length;
const isSummaryRequest = (options: LanguageModelV4CallOptions) =>
  textsOf(options.prompt, 'system').some((text) => text.includes('working memory'));

function usage(input: number, output: number) {
  return {
    inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: output, text: output, reasoning: 0 },
  };
}

/** The offline model. `delayMs`: the pause between streamed chunks (0 in tests). */
export function mockChatModel(delayMs = 12): LanguageModelV4 {
  return new MockLanguageModelV4({
    modelId: 'mock-chat',
    doGenerate: async (options) => {
      const text = isSummaryRequest(options) ? summaryOf(options.prompt) : answerTo('', 0);
      return {
        content: [{ type: 'text', text }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: usage(tokens(promptChars(options)), tokens(text.length)),
        warnings: [],
      };
    },
    doStream: async (options) => {
      const questions = textsOf(options.prompt, 'user');
      const turn = questions.filter((q) => !q.startsWith('[Context Summary]')).length - 1;
      const text = answerTo(questions.at(-1) ?? '', Math.max(0, turn));
      const words = text.match(/\S+\s*/g) ?? [text];
      const chunks: LanguageModelV4StreamPart[] = [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 't' },
      ];
      // About 40 chunks per answer: streamed like a provider, without 500 timers.
      const size = Math.ceil(words.length / 40);
      for (let i = 0; i < words.length; i += size)
        chunks.push({ type: 'text-delta', id: 't', delta: words.slice(i, i + size).join('') });
      chunks.push(
        { type: 'text-end', id: 't' },
        {
          type: 'finish',
          finishReason: { unified: 'stop', raw: 'stop' },
          usage: usage(tokens(promptChars(options)), tokens(text.length)),
        },
      );
      return { stream: simulateReadableStream({ chunks, chunkDelayInMs: delayMs, initialDelayInMs: delayMs }) };
    },
  });
}

export interface PickedModel {
  model: LanguageModelV4;
  label: string;
  offline: boolean;
}

/** The real provider when OPENAI_API_KEY or ANTHROPIC_API_KEY is set, else the mock. */
export async function pickChatModel(delayMs?: number): Promise<PickedModel> {
  if (process.env.OPENAI_API_KEY) {
    const { openai } = await import('@ai-sdk/openai');
    const id = process.env.OPENAI_MODEL ?? 'gpt-4o-mini';
    return { model: openai(id), label: `OpenAI ${id}`, offline: false };
  }
  if (process.env.ANTHROPIC_API_KEY) {
    const { anthropic } = await import('@ai-sdk/anthropic');
    const id = process.env.ANTHROPIC_MODEL ?? 'claude-haiku-4-5';
    return { model: anthropic(id), label: `Anthropic ${id}`, offline: false };
  }
  return { model: mockChatModel(delayMs), label: 'scripted mock model (offline)', offline: true };
}
