// End to end through generateText's tool loop (ai 7, MockLanguageModelV4): an agent that reads one
// large file per step in an 8k window, with the default options (a quarter-window target, paced
// lower by the session's fast growth, a tool result cap of 800 tokens). Every compaction may prune
// and summarize what the model has read before, but the file it just asked for, which it has not
// seen yet, reaches it whole: a cost target never cuts the latest tool result.
import { generateText, stepCountIs, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contextGuardMiddleware } from '../../../adapters/ai-sdk/index.ts';
import { recorder } from '../../helpers.ts';
import { fileText, scriptedModel, type CallOptions } from './mock.ts';

const WINDOW = 8_000;
const STEPS = 14;
/** Each read: 6,000 characters, about 1,900 tokens at the mock's count: over the 800-token result cap. */
const FILE_CHARS = 6_000;

/** The result the prompt ends with (the output of the call the model made last), as text. */
function latestResult(prompt: CallOptions['prompt']): { id: string; value: string } | undefined {
  const last = prompt.at(-1);
  if (last?.role !== 'tool' || !Array.isArray(last.content)) return undefined;
  const part = last.content.at(-1) as { toolCallId: string; output: { value: unknown } };
  return { id: part.toolCallId, value: String(part.output.value) };
}

describe('the latest tool result through generateText (ai 7)', () => {
  it('reaches the model whole on every step, compactions or not', async () => {
    const mock = scriptedModel(MockLanguageModelV4, {
      reply: (_options, index) =>
        index < STEPS
          ? {
              toolCalls: [
                { toolName: 'read_file', input: { path: `src/file-${index}.ts` }, toolCallId: `read-${index}` },
              ],
            }
          : { text: 'done' },
    });
    const events = recorder();
    const middleware = contextGuardMiddleware({ contextWindow: WINDOW, onEvent: events.onEvent });
    const files = new Map<string, string>();
    const result = await generateText({
      model: wrapLanguageModel({ model: mock.model, middleware }),
      maxRetries: 0,
      instructions: 'You are a code-reading agent.',
      prompt: 'Read the files one by one and tell me what they export.',
      tools: {
        read_file: tool({
          description: 'Read a file of the repository',
          inputSchema: z.object({ path: z.string() }),
          execute: async ({ path }) => {
            const text = fileText(path, FILE_CHARS);
            files.set(path, text);
            return text;
          },
        }),
      },
      stopWhen: stepCountIs(STEPS + 2),
    });
    expect(result.text).toBe('done');

    const compactions = events.of('compaction-end');
    // The window holds about three reads: the guard compacted several times.
    expect(compactions.length).toBeGreaterThanOrEqual(3);
    const agent = mock.agentCalls();
    expect(agent).toHaveLength(STEPS + 1);
    for (const [i, call] of agent.entries()) {
      expect(call.tokens, `call ${i} by the provider's count`).toBeLessThanOrEqual(WINDOW);
      if (i === 0) continue;
      const latest = latestResult(call.options.prompt);
      expect(latest?.id, `call ${i}`).toBe(`read-${i - 1}`);
      expect(latest?.value, `call ${i}: the file the model asked for, whole`).toBe(files.get(`src/file-${i - 1}.ts`));
    }
    // Compactions took older reads out (pruned or summarized), never the one just read.
    for (const c of compactions) expect(c.strategy).not.toBe('hard-fit');
  });
});
