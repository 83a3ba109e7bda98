// Many customers, one wrapped model, one guard: recall never gives one conversation another's
// originals (issue 22). Two ways it used to:
//   - a session id derived from the conversation's start (no `sessionId` given) is the same for
//     every conversation that opens alike ("hi" under one system prompt), so customer B's recall
//     searched customer A's archive;
//   - the recall tool found its session by tool-call id alone, and models reuse ids (`call_0`), so
//     a recall could run against whichever session last made a call with that id.
// Run through generateText with the SDK's mock model, on the in-memory store and on a real Redis.
import { generateText, stepCountIs, tool, wrapLanguageModel, type ToolExecutionOptions } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RedisStore } from '../../../adapters/redis/index.ts';
import { contextGuardMiddleware, recallTool } from '../../../adapters/ai-sdk/index.ts';
import type { ContextGuardOptions } from '../../../src/index.ts';
import { deletePrefix, skipRedisTests, startRedis, uniquePrefix, type RedisHandle } from '../redis/server.ts';
import { fileText, scriptedModel, type CallOptions, type Turn } from './mock.ts';

const WINDOW = 8_000;
const SYSTEM = 'You are the support assistant of a bank. Look up what you need, then answer.';
const FACT = 'Account holder Alice Zebra-Pelican, payout ledger QUOKKA-77341 at the Lisbon branch.';

function accountFile(): string {
  return `${fileText('accounts/alice.txt', 1_000)}\n${FACT}\n${fileText('accounts/alice-2.txt', 1_000)}`;
}

function toolOutput(prompt: CallOptions['prompt'], toolCallId: string): string {
  for (const m of prompt) {
    if (m.role !== 'tool' || !Array.isArray(m.content)) continue;
    for (const part of m.content as Array<{ toolCallId?: string; output?: { value?: unknown } }>)
      if (part.toolCallId === toolCallId) return String(part.output?.value ?? '');
  }
  return '';
}

/** Customer A: opens with "hi", reads the account (call `call_0`), reads on until the fact is out of the prompt, recalls it, answers. */
function customerA(): (options: CallOptions, index: number) => Turn {
  let reads = 0;
  let recalled = false;
  return (options, index) => {
    if (index === 0) return { toolCalls: [{ toolName: 'lookup', input: { path: 'alice' }, toolCallId: 'call_0' }] };
    if (recalled) return { text: 'done' };
    if (JSON.stringify(options.prompt).includes(FACT) && reads < 15) {
      reads++;
      return { toolCalls: [{ toolName: 'lookup', input: { path: `other-${reads}` }, toolCallId: `a-read-${reads}` }] };
    }
    recalled = true;
    return { toolCalls: [{ toolName: 'recall_context', input: { query: 'QUOKKA ledger' }, toolCallId: 'a-recall' }] };
  };
}

const lookup = tool({
  description: 'Look a record up',
  inputSchema: z.object({ path: z.string() }),
  execute: async ({ path }) => (path === 'alice' ? accountFile() : fileText(`${path}.txt`, 3_000)),
});

type StoreKind = 'memory' | 'redis';
const skipRedis = skipRedisTests('test/adapters/ai-sdk/tenancy.test.ts');

describe.each<StoreKind>(['memory', 'redis'])('tenancy through the AI SDK middleware (%s store)', (kind) => {
  let redis: RedisHandle | undefined;
  const prefix = uniquePrefix('tenancy-ai');
  const stores: RedisStore[] = [];

  beforeAll(async () => {
    if (kind === 'redis' && !skipRedis) redis = await startRedis();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    if (redis) await deletePrefix(redis, prefix);
    await redis?.close();
  });

  function guardOptions(): ContextGuardOptions {
    const base: ContextGuardOptions = { contextWindow: WINDOW, target: 0.5, cost: { minCallsBetween: 0 } };
    if (kind === 'memory') return base;
    const store = new RedisStore({ url: (redis as RedisHandle).url, prefix });
    stores.push(store);
    return { ...base, store };
  }

  const run = (model: Parameters<typeof generateText>[0]['model'], tools: object, options: object = {}) =>
    generateText({
      model,
      tools: tools as Record<string, ReturnType<typeof tool>>,
      instructions: SYSTEM,
      prompt: 'hi',
      stopWhen: stepCountIs(25),
      maxRetries: 0,
      ...options,
    });

  it.skipIf(kind === 'redis' && skipRedis)(
    "two customers who both open with 'hi' (a derived session): B's recall never returns A's originals",
    async () => {
      const middleware = contextGuardMiddleware(guardOptions());
      const tools = { lookup, recall_context: recallTool(middleware) };

      const a = scriptedModel(MockLanguageModelV4, { reply: customerA() });
      await run(wrapLanguageModel({ model: a.model, middleware }), tools);
      // A's own recall still works: what compaction took out of A's prompt comes back to A.
      const aAfter = a.agentCalls().at(-1)?.options.prompt ?? [];
      expect(toolOutput(aAfter, 'a-recall')).toContain(FACT);

      // B opens the same way and asks for A's records by words and by A's call id.
      const b = scriptedModel(MockLanguageModelV4, {
        reply: (_o, index) =>
          index === 0
            ? {
                toolCalls: [
                  { toolName: 'recall_context', input: { query: 'QUOKKA ledger Alice' }, toolCallId: 'b-1' },
                  { toolName: 'recall_context', input: { id: 'call_0' }, toolCallId: 'b-2' },
                ],
              }
            : { text: 'done' },
      });
      await run(wrapLanguageModel({ model: b.model, middleware }), tools);
      const bAfter = b.agentCalls().at(-1)?.options.prompt ?? [];
      expect(toolOutput(bAfter, 'b-1')).toMatch(/^Nothing in the archive matches/);
      expect(toolOutput(bAfter, 'b-2')).toMatch(/^Nothing in the archive matches/);
      expect(JSON.stringify(bAfter)).not.toContain('QUOKKA-77341');
    },
  );

  it.skipIf(kind === 'redis' && skipRedis)(
    "a tool-call id reused by another session (call_9) never points B's recall at A's archive",
    async () => {
      const middleware = contextGuardMiddleware(guardOptions());
      const base = recallTool(middleware);
      let entered!: () => void;
      const waiting = new Promise<void>((r) => {
        entered = r;
      });
      let release!: () => void;
      const gate = new Promise<void>((r) => {
        release = r;
      });
      // B's recall waits until A has made a call with the same id.
      const gatedRecall = {
        ...base,
        execute: async (input: never, options: ToolExecutionOptions<unknown>) => {
          entered();
          await gate;
          return (base.execute as unknown as (i: never, o: ToolExecutionOptions<unknown>) => Promise<string>)(
            input,
            options,
          );
        },
      };

      // A (session chat-A) reads the account, compacts it out of the prompt.
      const a = scriptedModel(MockLanguageModelV4, {
        reply: (() => {
          const script = customerA();
          return (options: CallOptions, index: number): Turn => {
            const turn = script(options, index);
            return turn.toolCalls?.[0]?.toolName === 'recall_context' ? { text: 'done' } : turn;
          };
        })(),
      });
      const modelA = wrapLanguageModel({ model: a.model, middleware });
      await run(modelA, { lookup }, { providerOptions: { contextGuard: { sessionId: 'chat-A' } } });
      expect((await middleware.guard.recall('chat-A', { query: 'QUOKKA' }))[0]?.text).toContain(FACT);

      // B (session chat-B) asks with call id call_9 ...
      const b = scriptedModel(MockLanguageModelV4, {
        reply: (_o, index) =>
          index === 0
            ? { toolCalls: [{ toolName: 'recall_context', input: { query: 'QUOKKA ledger' }, toolCallId: 'call_9' }] }
            : { text: 'done' },
      });
      const bRun = generateText({
        model: wrapLanguageModel({ model: b.model, middleware }),
        tools: { recall_context: gatedRecall as never },
        instructions: SYSTEM,
        prompt: 'what do you know about ledgers?',
        stopWhen: stepCountIs(5),
        maxRetries: 0,
        providerOptions: { contextGuard: { sessionId: 'chat-B' } },
      });
      await waiting;
      // ... and meanwhile A's next step makes a call with the same id.
      const a2 = scriptedModel(MockLanguageModelV4, {
        reply: () => ({ toolCalls: [{ toolName: 'lookup', input: { path: 'other-x' }, toolCallId: 'call_9' }] }),
      });
      await generateText({
        model: wrapLanguageModel({ model: a2.model, middleware }),
        tools: { lookup },
        instructions: SYSTEM,
        prompt: 'hi again',
        stopWhen: stepCountIs(1),
        maxRetries: 0,
        providerOptions: { contextGuard: { sessionId: 'chat-A' } },
      });
      release();
      await bRun;
      const bAfter = b.agentCalls().at(-1)?.options.prompt ?? [];
      expect(toolOutput(bAfter, 'call_9')).toMatch(/^Nothing in the archive matches/);
    },
  );
});
