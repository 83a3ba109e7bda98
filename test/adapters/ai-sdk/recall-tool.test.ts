// End-to-end tests of recallTool (ai 7) through the real generateText / streamText tool loops: a
// scripted MockLanguageModelV4 reads a file holding a fact, reads more files until the guard's
// compaction has taken the fact out of the prompt (a placeholder or a truncation marker naming the
// call's id in its place), then calls recall_context. The tests read what the provider received:
// the fact gone from the prompt, the id named in its place, and the fact back in the recall result.
import { generateText, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contextGuardMiddleware, deriveSessionId, recallTool } from '../../../adapters/ai-sdk/index.ts';
import type { ContextGuardOptions } from '../../../src/index.ts';
import { recorder } from '../../helpers.ts';
import { fileText, scriptedModel, textOf, type CallOptions, type Turn } from './mock.ts';

const WINDOW = 8_000;
const SYSTEM = 'You are a coding agent. Read the files you need, then answer.';
const REQUEST = 'Find out how the deploy token is rotated.';
const FACT = 'The deploy token rotates every 37 minutes through the ZEBRA-PELICAN-4419 vault.';
const FACT_CALL = 'read-fact';

/** A file of about `chars` characters with the fact in its middle (so a head-and-tail cut loses it). */
function factFile(chars: number): string {
  const half = fileText('config/deploy.ts', Math.floor(chars / 2));
  return `${half}\n// ${FACT}\n${fileText('config/rotation.ts', Math.floor(chars / 2))}`;
}

/** What the provider received as the output of a tool call, as text ('' when the call is not in the prompt). */
function toolOutput(prompt: CallOptions['prompt'], toolCallId: string): string {
  for (const m of prompt) {
    if (m.role !== 'tool' || !Array.isArray(m.content)) continue;
    for (const part of m.content as Array<{ toolCallId?: string; output?: { value?: unknown } }>) {
      if (part.toolCallId === toolCallId) return String(part.output?.value ?? '');
    }
  }
  return '';
}

/**
 * The agent: reads the fact's file, then other files until the prompt no longer holds the fact (at
 * most 15 reads), then makes the `recall` call, then answers.
 */
function recallScript(recall: Turn['toolCalls']) {
  let reads = 0;
  let recalled = false;
  return (options: CallOptions, index: number): Turn => {
    if (index === 0)
      return { toolCalls: [{ toolName: 'read_file', input: { path: 'config/deploy.ts' }, toolCallId: FACT_CALL }] };
    if (recalled) return { text: 'done' };
    if (JSON.stringify(options.prompt).includes(FACT) && reads < 15) {
      reads++;
      return { toolCalls: [{ toolName: 'read_file', input: { path: `src/file-${reads}.ts` } }] };
    }
    recalled = true;
    return { toolCalls: recall };
  };
}

function setup(
  reply: (options: CallOptions, index: number) => Turn,
  factChars: number,
  options: ContextGuardOptions = {},
) {
  const mock = scriptedModel(MockLanguageModelV4, { reply });
  const events = recorder();
  // Half the window as the target, not paced deeper by the fast growth of these few big steps:
  // pruning alone reaches it, so outputs are pruned, not summarized.
  const middleware = contextGuardMiddleware({
    contextWindow: WINDOW,
    target: 0.5,
    cost: { minCallsBetween: 0 },
    onEvent: events.onEvent,
    ...options,
  });
  const model = wrapLanguageModel({ model: mock.model, middleware });
  const tools = {
    read_file: tool({
      description: 'Read a file of the repository',
      inputSchema: z.object({ path: z.string() }),
      execute: async ({ path }) => (path === 'config/deploy.ts' ? factFile(factChars) : fileText(path, 3_000)),
    }),
    recall_context: recallTool(middleware),
  };
  return { mock, events, middleware, model, tools };
}

type Mode = 'generate' | 'stream';

/** One agent run through generateText or streamText (the request and system prompt are fixed); its final text. */
async function run(
  mode: Mode,
  args: Pick<ReturnType<typeof setup>, 'model' | 'tools'> & Pick<Parameters<typeof generateText>[0], 'providerOptions'>,
): Promise<string> {
  const common = { maxRetries: 0, instructions: SYSTEM, prompt: REQUEST, stopWhen: stepCountIs(25), ...args };
  if (mode === 'generate') return (await generateText(common)).text;
  return await streamText(common).text;
}

/** The prompts around the recall: the one the model answered with the recall call, and the next (with its result). */
function recallCalls(mock: ReturnType<typeof setup>['mock']) {
  const agent = mock.agentCalls();
  const at = agent.findIndex((c) => JSON.stringify(c.options.prompt).includes('"recall-1"'));
  expect(at, 'no prompt holds the recall result').toBeGreaterThan(0);
  return { before: agent[at - 1]!.options.prompt, after: agent[at]!.options.prompt };
}

describe('recallTool (ai 7)', () => {
  it.each<Mode>(['generate', 'stream'])(
    'gives back a pruned tool output by the id its placeholder names (%s)',
    async (mode) => {
      const recall = [{ toolName: 'recall_context', input: { id: FACT_CALL }, toolCallId: 'recall-1' }];
      const { mock, events, model, tools } = setup(recallScript(recall), 2_000);
      expect(await run(mode, { model, tools })).toBe('done');

      const { before, after } = recallCalls(mock);
      // When the model asked, the fact was out of the prompt and a placeholder named the call's id.
      expect(JSON.stringify(before)).not.toContain(FACT);
      const placeholder = toolOutput(before, FACT_CALL);
      expect(placeholder).toMatch(/^\[Output of tool read_file removed to save context/);
      expect(placeholder).toContain('Archived: recall id "read-fact"');
      // The next step's prompt holds the recall's answer: the whole original, with its header.
      const answer = toolOutput(after, 'recall-1');
      expect(answer).toContain(FACT);
      expect(answer).toMatch(/^1 archived item for id "read-fact"/);
      expect(answer).toMatch(
        /--- \[tool read_file · id read-fact · compaction-batch-auto:[0-9a-f]+-\S+ · 2,\d{3} chars\]/,
      );
      expect(answer).not.toContain('cut');
      const receipts = events.of('compaction-end').map((e) => e.receipt);
      expect(receipts.some((r) => r.replaced.some((x) => x.toolCallId === FACT_CALL))).toBe(true);
    },
  );

  it('finds a truncated output by the words of a query, cut around the match', async () => {
    // 12,000 characters: over the 800-token result cap, so compaction truncates it, middle first.
    const recall = [{ toolName: 'recall_context', input: { query: 'ZEBRA PELICAN vault' }, toolCallId: 'recall-1' }];
    const { mock, model, tools } = setup(recallScript(recall), 12_000);
    expect(await run('generate', { model, tools })).toBe('done');

    const { before, after } = recallCalls(mock);
    expect(JSON.stringify(before)).not.toContain(FACT);
    // Whether still truncated or since replaced, what stands for the output names its id.
    expect(toolOutput(before, FACT_CALL)).toMatch(/(archived whole|Archived): recall id "read-fact"/);
    const answer = toolOutput(after, 'recall-1');
    expect(answer).toContain(FACT);
    expect(answer).toMatch(
      /--- \[tool read_file · id read-fact · compaction-batch-\S+ · 12,\d{3} chars, cut around the match\]/,
    );
    // The recall answer is bounded: 40% of the 8k window in characters, plus its headers.
    expect(answer.length).toBeLessThan(3_200 + 600);
  });

  it('by id alone, a long truncated output comes back from where the prompt cuts it, with the offset to read on', async () => {
    const recall = [
      { toolName: 'recall_context', input: { id: FACT_CALL }, toolCallId: 'recall-1' },
      { toolName: 'recall_context', input: { id: FACT_CALL, query: 'ZEBRA PELICAN vault' }, toolCallId: 'recall-2' },
    ];
    const { mock, model, tools } = setup(recallScript(recall), 12_000);
    await run('generate', { model, tools });

    const { after } = recallCalls(mock);
    const byId = toolOutput(after, 'recall-1');
    // The part the prompt's copy lacks: it starts after the head the truncation kept.
    expect(byId).toMatch(/· 12,\d{3} chars, from character [\d,]+\]\n\[\.\.\. [\d,]+ characters before \.\.\.\]/);
    expect(byId).toMatch(/characters after: recall with offset \d+ to read on/);
    const both = toolOutput(after, 'recall-2');
    expect(both).toMatch(/^1 archived item for id "read-fact" and query "ZEBRA PELICAN vault"/);
    expect(both).toContain('cut around the match]');
    expect(both).toContain(FACT);
  });

  it('gives back what a summary replaced: the batch its footer names, then the item it lists', async () => {
    // No pruning: the compaction summarizes the fact's step away; the summary's footer names the batch.
    let label: string | undefined;
    let listed: string | undefined;
    const reply = (options: CallOptions, index: number): Turn => {
      const recall = (input: object, toolCallId: string): Turn => ({
        toolCalls: [{ toolName: 'recall_context', input, toolCallId }],
      });
      if (index === 0)
        return { toolCalls: [{ toolName: 'read_file', input: { path: 'config/deploy.ts' }, toolCallId: FACT_CALL }] };
      if (listed !== undefined) return { text: 'done' };
      if (label !== undefined) {
        // The batch's answer lists its items by id, each with its tool: the model picks the file's.
        listed = /--- \[tool read_file · id (\S+) · [^\]]*\]\nread_file returned:\n\/\/ config\/deploy\.ts/.exec(
          toolOutput(options.prompt, 'recall-1'),
        )?.[1];
        return recall({ id: listed ?? 'none' }, 'recall-2');
      }
      const texts = options.prompt.map((m) => textOf(m.content)).join('\n');
      label = /in archive batch "(compaction-batch-[^"]+)"/.exec(texts)?.[1];
      if (label !== undefined || index > 15) return recall({ id: label ?? 'none' }, 'recall-1');
      return { toolCalls: [{ toolName: 'read_file', input: { path: `src/file-${index}.ts` } }] };
    };
    const { mock, model, tools } = setup(reply, 2_000, { prune: false });
    await run('generate', { model, tools });

    const { before, after } = recallCalls(mock);
    expect(label).toMatch(/^compaction-batch-auto:/);
    expect(JSON.stringify(before)).not.toContain(FACT);
    expect(toolOutput(before, FACT_CALL)).toBe('');
    // The batch: several items (the step's call among them), within the recall bound.
    const batch = toolOutput(after, 'recall-1');
    expect(batch).toMatch(/^\d+ archived items for id "compaction-batch-/);
    expect(batch).toContain(`read_file({"path":"config/deploy.ts"}) [${FACT_CALL}]`);
    expect(listed).toBe(FACT_CALL);
    const item = toolOutput(mock.agentCalls().at(-1)!.options.prompt, 'recall-2');
    expect(item).toMatch(/^1 archived item for id "read-fact"/);
    expect(item).toContain(FACT);
  });

  it('answers that nothing matches, and says what the archive holds', async () => {
    // With a query that does match, in the same step: the session's archive is the one searched.
    const recall = [
      { toolName: 'recall_context', input: { query: 'xylophone quasar' }, toolCallId: 'recall-1' },
      { toolName: 'recall_context', input: { query: 'ZEBRA PELICAN vault' }, toolCallId: 'recall-2' },
    ];
    const { mock, model, tools } = setup(recallScript(recall), 2_000);
    await run('generate', { model, tools });

    const { after } = recallCalls(mock);
    expect(toolOutput(after, 'recall-2')).toContain(FACT);
    expect(toolOutput(after, 'recall-1')).toBe(
      'Nothing in the archive matches query "xylophone quasar"; the archive holds what compaction removed from ' +
        'this conversation (tool outputs and the messages a summary replaced). ' +
        'Try other words, or the id a placeholder names.',
    );
  });

  it('asks for a query or an id when given neither, without looking anything up', async () => {
    const reply = (_o: CallOptions, index: number): Turn =>
      index === 0
        ? { toolCalls: [{ toolName: 'recall_context', input: {}, toolCallId: 'recall-1' }] }
        : { text: 'done' };
    const { mock, model, tools } = setup(reply, 2_000);
    await run('generate', { model, tools });

    const answer = toolOutput(mock.agentCalls()[1]!.options.prompt, 'recall-1');
    expect(answer).toMatch(/^Nothing was looked up: give a `query` .* or an `id`/);
  });

  it('says the archive is off when the guard keeps none (and placeholders say to call the tool again)', async () => {
    const recall = [{ toolName: 'recall_context', input: { id: FACT_CALL }, toolCallId: 'recall-1' }];
    const { mock, model, tools } = setup(recallScript(recall), 2_000, { archive: false });
    await run('generate', { model, tools });

    const { before, after } = recallCalls(mock);
    expect(toolOutput(before, FACT_CALL)).toContain('Call the tool again if you need it.');
    expect(toolOutput(after, 'recall-1')).toMatch(/^Nothing can be recalled: the archive is turned off/);
  });

  it('finds the session of an explicit providerOptions.contextGuard.sessionId, not the derived one', async () => {
    const recall = [{ toolName: 'recall_context', input: { id: FACT_CALL }, toolCallId: 'recall-1' }];
    const { mock, middleware, model, tools } = setup(recallScript(recall), 2_000);
    await run('generate', { model, tools, providerOptions: { contextGuard: { sessionId: 'chat-7' } } });

    expect(toolOutput(recallCalls(mock).after, 'recall-1')).toContain(FACT);
    // The archive is the named session's; the id derived from the conversation names none.
    expect((await middleware.guard.recall('chat-7', { id: FACT_CALL }))[0]?.text).toContain(FACT);
    const derived = deriveSessionId(mock.agentCalls()[0]!.options.prompt);
    expect(await middleware.guard.recall(derived, { id: FACT_CALL })).toEqual([]);
  });
});
