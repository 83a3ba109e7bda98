// Session isolation through the AI SDK (generateText with the middleware): a session id chosen by
// a caller (providerOptions.contextGuard.sessionId), whatever string it is, never reaches another
// session's archive, receipts or state, on a shared in-memory store.
import { generateText, type ModelMessage, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { contextGuardMiddleware } from '../../../adapters/ai-sdk/index.ts';
import { createContextGuard, MemoryStore, type StateStore } from '../../../src/index.ts';
import { conversation, craftedIds } from '../../state/isolation.ts';
import { scriptedModel } from './mock.ts';

describe('AI SDK: a crafted session id reaches no other session', () => {
  it("neither overwrites nor reads another session's archive and receipts", async () => {
    const guard = createContextGuard({ contextWindow: 8_000, store: new MemoryStore() as StateStore<never> });
    const mock = scriptedModel(MockLanguageModelV4, { reply: () => ({ text: 'ok' }) });
    const model = wrapLanguageModel({ model: mock.model, middleware: contextGuardMiddleware({ guard }) });
    const send = async (sessionId: string, fact: string) => {
      const [system, ...messages] = conversation(fact);
      await generateText({
        model,
        system: system?.content as string,
        messages: messages as ModelMessage[],
        providerOptions: { contextGuard: { sessionId } },
      });
    };
    await send('victim', 'IBAN DE44 5001 0517 5407 3249 31');
    const receipts = await guard.compactions('victim');
    expect(receipts).toHaveLength(1);
    for (const id of craftedIds('victim')) {
      await send(id, 'nothing to see');
      expect(await guard.compactions(id), JSON.stringify(id)).toHaveLength(1);
      expect(JSON.stringify(await guard.recall(id, { query: 'IBAN DE44' }))).not.toContain('DE44');
    }
    expect(await guard.compactions('victim')).toEqual(receipts);
    expect((await guard.recall('victim', { query: 'IBAN DE44' }))[0]?.text).toContain('DE44 5001');
  });
});
