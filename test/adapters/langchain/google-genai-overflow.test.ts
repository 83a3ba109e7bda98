// Overflow recovery with @langchain/google-genai, end to end through its HTTP layer. The package
// calls Google's @google/generative-ai SDK, which sends every request with the global fetch; here a
// fake Gemini API stands in for it (vi.stubGlobal), so the error the guard sees is the one the SDK
// builds from the API's 400 response: a GoogleGenerativeAIFetchError whose message carries the
// API's words after the URL and the HTTP status, with `status` 400 and no parsed body.
import { GoogleGenerativeAIFetchError } from '@google/generative-ai';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatGoogleGenerativeAI } from '@langchain/google-genai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { withContextGuard } from '../../../adapters/langchain/index.ts';
import { SUMMARY_OPEN } from '../../../src/compaction/placement.ts';
import { isContextLengthError, promptTokensFromError } from '../../../src/call/overflow.ts';
import { recorder } from '../../helpers.ts';

const GEMINI_HOST = 'generativelanguage.googleapis.com';
/** gemini-2.5-flash's input limit, as the API states it in its rejection. */
const WINDOW = 1_048_576;
const REPORTED = 1_200_000;
const LATEST = 'What did you find?';
const SUMMARY = 'The config is parsed in src/module-3.ts; the bug is an off-by-one in its loop.';

/** The Gemini API's answer to a prompt over the model's input limit. */
const TOO_LONG = {
  error: {
    code: 400,
    message: `The input token count (${REPORTED}) exceeds the maximum number of tokens allowed (${WINDOW}).`,
    status: 'INVALID_ARGUMENT',
  },
};

/** A 400 about something else: not an overflow, not retried. */
const BAD_KEY = {
  error: {
    code: 400,
    message: 'API key not valid. Please pass a valid API key.',
    status: 'INVALID_ARGUMENT',
    details: [
      { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
    ],
  },
};

interface GeminiRequest {
  url: URL;
  contents: unknown[];
  /** What the API counts: the system instruction and the contents, as sent. */
  prompt: string;
}

type Respond = (request: GeminiRequest, index: number) => Response;

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), {
    status,
    statusText: status === 200 ? 'OK' : 'Bad Request',
    headers: { 'content-type': 'application/json' },
  });

/** A reply of "ok" in Gemini's wire format; server-sent events when the request streams. */
function ok(request: GeminiRequest, promptTokenCount: number): Response {
  const body = {
    candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount, candidatesTokenCount: 1, totalTokenCount: promptTokenCount + 1 },
    modelVersion: 'gemini-2.5-flash',
  };
  if (request.url.searchParams.get('alt') !== 'sse') return json(200, body);
  const events = `data: ${JSON.stringify(body)}\r\n\r\n`;
  return new Response(events, { status: 200, headers: { 'content-type': 'text/event-stream' } });
}

/** Replaces the global fetch with a fake Gemini API for this test; the requests it saw, in order. */
function fakeGemini(respond: Respond): GeminiRequest[] {
  const requests: GeminiRequest[] = [];
  vi.stubGlobal('fetch', async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const sent = JSON.parse(String(init?.body ?? '{}')) as { systemInstruction?: unknown; contents?: unknown[] };
    const { systemInstruction = null, contents = [] } = sent;
    const request = { url, contents, prompt: JSON.stringify([systemInstruction, contents]) };
    requests.push(request);
    return respond(request, requests.length - 1);
  });
  return requests;
}

afterEach(() => {
  vi.unstubAllGlobals();
});

/**
 * The provider's count at a fixed density, set so that the first request of a test (the one the
 * API rejects) is the 1,200,000 tokens its rejection reports.
 */
function providerCount(requests: GeminiRequest[]): (request: GeminiRequest) => number {
  return (request) => Math.ceil((request.prompt.length * REPORTED) / requests[0]!.prompt.length);
}

/** Rejects the first request for its length, then answers every request. */
function rejectingFirst(): GeminiRequest[] {
  const requests: GeminiRequest[] = fakeGemini((request, index) =>
    index === 0 ? json(400, TOO_LONG) : ok(request, providerCount(requests)(request)),
  );
  return requests;
}

/**
 * A coding session of 20 file reads, 2.4 million characters: under the guard's threshold by its
 * first estimate (about 900,000 tokens), over Gemini's limit by the API's count (1,200,000).
 */
function history(): BaseMessage[] {
  const messages: BaseMessage[] = [
    new SystemMessage('You are a careful coding agent.'),
    new HumanMessage('Find where the config is parsed and fix the bug.'),
  ];
  for (let i = 0; i < 20; i++) {
    messages.push(
      new AIMessage({
        content: `Reading file ${i}.`,
        tool_calls: [{ id: `call-${i}`, name: 'read_file', args: { path: `src/module-${i}.ts` }, type: 'tool_call' }],
      }),
      new ToolMessage({
        content: `// module ${i}\n${'const x = parse(config);\n'.repeat(4_800)}`,
        tool_call_id: `call-${i}`,
        name: 'read_file',
      }),
    );
  }
  messages.push(new HumanMessage(LATEST));
  return messages;
}

/** Characters of the history's messages: the first request, sent whole, holds at least these. */
const historyChars = () => history().reduce((sum, m) => sum + (m.text as string).length, 0);

const gemini = () => new ChatGoogleGenerativeAI({ model: 'gemini-2.5-flash', apiKey: 'test-key' });

function guarded(onEvent: ReturnType<typeof recorder>['onEvent']) {
  return withContextGuard(gemini(), { contextWindow: WINDOW, summarizer: async () => SUMMARY, onEvent });
}

const hasSummary = (request: GeminiRequest) =>
  request.prompt.includes(SUMMARY_OPEN) && request.prompt.includes(SUMMARY);

function expectOnlyGemini(requests: GeminiRequest[]): void {
  expect(requests.map((r) => r.url.host)).toEqual(requests.map(() => GEMINI_HOST));
}

/**
 * The rejected request was the whole history; the retry is the compacted prompt, under the model's
 * limit by the API's count, and ends with the user's question.
 */
function expectCompactedRetry(requests: GeminiRequest[]): void {
  const [rejected, retry] = requests;
  expect(rejected!.prompt.length).toBeGreaterThan(historyChars());
  expect(hasSummary(rejected!)).toBe(false);
  expect(hasSummary(retry!)).toBe(true);
  expect(providerCount(requests)(retry!)).toBeLessThan(WINDOW);
  expect(retry!.contents.at(-1)).toEqual({ role: 'user', parts: [{ text: LATEST }] });
}

describe('@langchain/google-genai: what a rejection for length throws', () => {
  it('a GoogleGenerativeAIFetchError the guard recognizes, with the count the API reported', async () => {
    const requests = fakeGemini(() => json(400, TOO_LONG));
    const url = `https://${GEMINI_HOST}/v1beta/models/gemini-2.5-flash:generateContent`;
    const thrown = await gemini()
      .invoke([new HumanMessage('hello')])
      .catch((error: unknown) => error);

    expect(thrown).toBeInstanceOf(GoogleGenerativeAIFetchError);
    expect(thrown).toMatchObject({
      status: 400,
      statusText: 'Bad Request',
      message: `[GoogleGenerativeAI Error]: Error fetching from ${url}: [400 Bad Request] ${TOO_LONG.error.message}`,
    });
    expect(isContextLengthError(thrown)).toBe(true);
    expect(promptTokensFromError(thrown)).toBe(REPORTED);
    // A 400 is not retried by LangChain's own caller: the guard sees the first rejection.
    expect(requests).toHaveLength(1);
    expectOnlyGemini(requests);
  });
});

describe('withContextGuard(ChatGoogleGenerativeAI): an overflow is recovered with one retry', () => {
  it('invoke: the rejected count is recorded, the call compacted and sent once more', async () => {
    const requests = rejectingFirst();
    const rec = recorder();
    const reply = await guarded(rec.onEvent).invoke(history(), { configurable: { thread_id: 'gemini' } });

    expect(reply.text).toBe('ok');
    expect(requests).toHaveLength(2);
    expectOnlyGemini(requests);
    expectCompactedRetry(requests);
    expect(rec.of('overflow-retry')).toEqual([
      expect.objectContaining({ sessionId: 'gemini', reportedTokens: REPORTED }),
    ]);
    // The API's count of the rejected prompt, then the retry's own from its usageMetadata.
    const retryCount = providerCount(requests)(requests[1]!);
    expect(rec.of('usage-recorded').map((e) => e.inputTokens)).toEqual([REPORTED, retryCount]);
  });

  it('stream: a rejection of streamGenerateContent before any chunk is retried, and the retry streams', async () => {
    const requests = rejectingFirst();
    const rec = recorder();
    let text = '';
    const stream = await guarded(rec.onEvent).stream(history(), { configurable: { thread_id: 'gemini-stream' } });
    for await (const chunk of stream) text += chunk.text;

    expect(text).toBe('ok');
    const streaming = '/v1beta/models/gemini-2.5-flash:streamGenerateContent';
    expect(requests.map((r) => r.url.pathname)).toEqual([streaming, streaming]);
    expectOnlyGemini(requests);
    expectCompactedRetry(requests);
    expect(rec.of('overflow-retry')).toEqual([
      expect.objectContaining({ sessionId: 'gemini-stream', reportedTokens: REPORTED }),
    ]);
  });

  it('a second rejection reaches the caller as the SDK threw it, without a third request', async () => {
    const requests = fakeGemini(() => json(400, TOO_LONG));
    const thrown = await guarded(recorder().onEvent)
      .invoke(history(), { configurable: { thread_id: 'gemini-twice' } })
      .catch((error: unknown) => error);

    expect(thrown).toBeInstanceOf(GoogleGenerativeAIFetchError);
    expect((thrown as Error).message).toContain(TOO_LONG.error.message);
    expect(requests).toHaveLength(2);
    expectOnlyGemini(requests);
  });

  it('another 400 (an invalid API key) is not retried', async () => {
    const requests = fakeGemini(() => json(400, BAD_KEY));
    const rec = recorder();
    const thrown = await guarded(rec.onEvent)
      .invoke(history(), { configurable: { thread_id: 'gemini-key' } })
      .catch((error: unknown) => error);

    expect(thrown).toBeInstanceOf(GoogleGenerativeAIFetchError);
    expect(isContextLengthError(thrown)).toBe(false);
    expect(requests).toHaveLength(1);
    expect(rec.of('overflow-retry')).toEqual([]);
  });
});
