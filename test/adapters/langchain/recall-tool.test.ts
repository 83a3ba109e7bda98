// End-to-end tests of recallTool through LangChain v1's createAgent with the guard's middleware and
// a MemorySaver thread: a scripted tool-calling chat model reads a file holding a fact, reads more
// files until the middleware's compaction has taken the fact out of the thread's state (a
// placeholder naming the call's id in its place), then calls recall_context. The tests read what
// the model received: the fact gone, the id named in its place, and the fact back in the tool answer.
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { MemorySaver } from '@langchain/langgraph';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contextGuardMiddleware, recallTool } from '../../../adapters/langchain/index.ts';
import { ToolCountingChatModel, textOf } from './agent-helpers.ts';

const WINDOW = 8_000;
const SYSTEM = 'You are a careful coding agent. Read the files you need, then answer.';
const FACT = 'The deploy token rotates every 37 minutes through the ZEBRA-PELICAN-4419 vault.';
const FACT_CALL = 'read-fact';

/** About `chars` characters of source, the fact in the middle of the fact's file. */
function source(path: string, chars: number): string {
  const line = (i: number) => `export const value${i} = compute(${i}, '${path}');\n`;
  let half = `// ${path}\n`;
  for (let i = 0; half.length < chars / 2; i++) half += line(i);
  return path === 'config/deploy.ts' ? `${half}// ${FACT}\n${half}` : `${half}${half}`.slice(0, chars);
}

const readFile = tool(async ({ path }: { path: string }) => source(path, 2_400), {
  name: 'read_file',
  description: 'Read a file of the repository',
  schema: z.object({ path: z.string() }),
});

const call = (name: string, args: object, id: string) =>
  new AIMessage({ content: '', tool_calls: [{ id, name, args, type: 'tool_call' }] });

/** One step of recall calls, `recall-1`, `recall-2`... */
const recalls = (inputs: object[]) =>
  new AIMessage({
    content: '',
    tool_calls: inputs.map((args, i) => ({
      id: `recall-${i + 1}`,
      name: 'recall_context',
      args,
      type: 'tool_call' as const,
    })),
  });

/** What the model received as the answer to a tool call ('' when the call is not in its messages). */
function toolAnswer(messages: readonly BaseMessage[], toolCallId: string): string {
  const m = messages.find((x) => x.type === 'tool' && (x as { tool_call_id?: string }).tool_call_id === toolCallId);
  return m ? textOf(m) : '';
}

/**
 * The agent: reads the fact's file, then other files until its messages no longer hold the fact (at
 * most 15 reads), then calls recall_context with each of `recall` (at once), then answers.
 */
function recallScript(recall: object[]) {
  let reads = 0;
  let step = 0;
  return (messages: BaseMessage[]): AIMessage => {
    step++;
    if (step === 1) return call('read_file', { path: 'config/deploy.ts' }, FACT_CALL);
    if (toolAnswer(messages, 'recall-1')) return new AIMessage('done');
    const factInView = messages.some((m) => textOf(m).includes(FACT));
    if (factInView && reads < 15) return call('read_file', { path: `src/file-${++reads}.ts` }, `read-${reads}`);
    return recalls(recall);
  };
}

function harness(reply: (messages: BaseMessage[]) => AIMessage) {
  const model = new ToolCountingChatModel({ reply: (messages) => reply(messages) });
  // Half the window as the target: pruning alone reaches it, so outputs are pruned, not summarized.
  const middleware = contextGuardMiddleware({ contextWindow: WINDOW, target: 0.5 });
  const agent = createAgent({
    model,
    tools: [readFile, recallTool(middleware)],
    middleware: [middleware],
    systemPrompt: SYSTEM,
    checkpointer: new MemorySaver(),
  });
  const run = (text: string, threadId: string) =>
    (agent as unknown as { invoke(input: unknown, config: unknown): Promise<{ messages: BaseMessage[] }> }).invoke(
      { messages: [new HumanMessage(text)] },
      { configurable: { thread_id: threadId }, recursionLimit: 100 },
    );
  return { model, middleware, run };
}

/** The model's messages when it made the recall call, and at its next call (with the tool's answer). */
function aroundRecall(model: ToolCountingChatModel) {
  const calls = model.modelCalls;
  const at = calls.findIndex((c) => toolAnswer(c.messages, 'recall-1') !== '');
  expect(at, 'no model call received the recall answer').toBeGreaterThan(0);
  return { before: calls[at - 1]!.messages, after: calls[at]!.messages };
}

describe('recallTool through createAgent', () => {
  it('gives back a pruned tool output by the id its placeholder names', async () => {
    const h = harness(recallScript([{ id: FACT_CALL }]));
    const result = await h.run('Find out how the deploy token is rotated.', 'thread-1');
    expect(textOf(result.messages.at(-1)!)).toBe('done');

    const { before, after } = aroundRecall(h.model);
    expect(before.some((m) => textOf(m).includes(FACT))).toBe(false);
    const placeholder = toolAnswer(before, FACT_CALL);
    expect(placeholder).toMatch(/^\[Output of tool read_file removed to save context/);
    expect(placeholder).toContain('Archived: recall id "read-fact"');
    const answer = toolAnswer(after, 'recall-1');
    expect(answer).toMatch(/^1 archived item for id "read-fact"/);
    expect(answer).toMatch(/--- \[tool read_file · id read-fact · compaction-batch-thread-1-\S+ · 2,\d{3} chars\]/);
    expect(answer).toContain(FACT);
    // The archive is the thread's: the guard finds it under the thread_id.
    expect((await h.middleware.guard.recall('thread-1', { id: FACT_CALL }))[0]?.text).toContain(FACT);
  });

  it('finds a pruned tool output by the words of a query', async () => {
    const h = harness(recallScript([{ query: 'ZEBRA PELICAN vault' }]));
    await h.run('Find out how the deploy token is rotated.', 'thread-2');

    const { before, after } = aroundRecall(h.model);
    expect(before.some((m) => textOf(m).includes(FACT))).toBe(false);
    expect(toolAnswer(before, FACT_CALL)).toContain('recall id "read-fact"');
    const answer = toolAnswer(after, 'recall-1');
    expect(answer).toMatch(/^1 archived item for query "ZEBRA PELICAN vault"/);
    expect(answer).toContain('--- [tool read_file · id read-fact · compaction-batch-thread-2-');
    expect(answer).toContain(FACT);
  });

  it('answers that nothing matches, and says what the archive holds', async () => {
    // With a query that does match, in the same step: the thread's archive is the one searched.
    const h = harness(recallScript([{ query: 'xylophone quasar' }, { query: 'ZEBRA PELICAN vault' }]));
    await h.run('Find out how the deploy token is rotated.', 'thread-3');

    const { after } = aroundRecall(h.model);
    expect(toolAnswer(after, 'recall-2')).toContain(FACT);
    expect(toolAnswer(after, 'recall-1')).toBe(
      'Nothing in the archive matches query "xylophone quasar"; the archive holds what compaction removed from ' +
        'this conversation (tool outputs and the messages a summary replaced). ' +
        'Try other words, or the id a placeholder names.',
    );
  });

  it('asks for a query or an id when given neither', async () => {
    // Asked as soon as the fact's file is read: nothing was looked up, not even the file.
    let step = 0;
    const h = harness(() =>
      ++step === 1
        ? call('read_file', { path: 'config/deploy.ts' }, FACT_CALL)
        : step === 2
          ? recalls([{}])
          : new AIMessage('done'),
    );
    await h.run('Find out how the deploy token is rotated.', 'thread-4');

    const answer = toolAnswer(h.model.modelCalls.at(-1)!.messages, 'recall-1');
    expect(answer).toMatch(/^Nothing was looked up: give a `query` .* or an `id`/);
  });

  it('keeps threads apart: a recall in another thread does not see this one', async () => {
    const h = harness(recallScript([{ id: FACT_CALL }]));
    await h.run('Find out how the deploy token is rotated.', 'thread-5');
    expect(toolAnswer(aroundRecall(h.model).after, 'recall-1')).toContain(FACT);
    // The same tool, called in a thread with nothing archived, finds nothing.
    const recall = recallTool(h.middleware);
    const other = await recall.invoke({ id: FACT_CALL }, { configurable: { thread_id: 'thread-6' } });
    expect(other).toMatch(/^Nothing in the archive matches id "read-fact"/);
    expect(await recall.invoke({ id: FACT_CALL })).toBe('Recall is not available here: this run has no thread_id.');
  });
});
