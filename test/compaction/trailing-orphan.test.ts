// A tool result whose call is gone, at the end of the prompt (a host whose loop lost the assistant
// message, a pruner that removed it): turned into an assistant note like other orphans, it would
// make the prompt end on an assistant message, which Claude models from 4.6 on reject with a 400
// ("This model does not support assistant message prefill"). The repair gives it its call back
// instead: the tool message stays a tool message, last, and its call is in the message before it.
import { describe, expect, it } from 'vitest';
import { repairToolPairing } from '../../src/compaction/structure.ts';
import { createContextGuard, type GuardMessage } from '../../src/index.ts';
import { assistant, recorder, system, toolStep, user } from '../helpers.ts';
import { contentText, text } from './builders.ts';
import { expectInvariants } from './invariants.ts';
import { pairingProblems, prefillProblem } from './pairing.ts';

const result = (id: string, value = `output of ${id}`, toolName = 'bash') => ({
  type: 'tool-result' as const,
  toolCallId: id,
  toolName,
  output: { type: 'text' as const, value },
});
const tool = (...results: ReturnType<typeof result>[]): GuardMessage => ({ role: 'tool', content: results });
const calls = (m: GuardMessage | undefined) =>
  Array.isArray(m?.content)
    ? m.content.flatMap((p) => (p.type === 'tool-call' ? [{ id: p.toolCallId, name: p.toolName, input: p.input }] : []))
    : [];

/** The repair of `messages`, checked: valid pairing, not ending on an assistant message, the host's tool messages kept. */
function repaired(messages: GuardMessage[]) {
  const r = repairToolPairing(messages);
  expect(pairingProblems(r.messages)).toEqual([]);
  expect(prefillProblem(messages, r.messages)).toBeUndefined();
  expect(r.messages[r.messages.length - 1]?.role).toBe('tool');
  return r;
}

describe('an orphan tool result that ends the prompt gets its call back', () => {
  it('alone after the user message: one call inserted before it, the tool message itself kept', () => {
    const orphan = tool(result('gone'));
    const messages = [system('s'), user('Run the tests.'), orphan];
    const r = repaired(messages);
    expect(r.messages).toHaveLength(4);
    expect(r.messages.slice(0, 2)).toEqual(messages.slice(0, 2));
    expect(r.messages[0]).toBe(messages[0]);
    expect(r.messages[1]).toBe(messages[1]);
    expect(r.messages[2]?.role).toBe('assistant');
    expect(calls(r.messages[2])).toEqual([{ id: 'gone', name: 'bash', input: {} }]);
    expect(r.messages[3]).toBe(orphan);
    expect(r).toMatchObject({ orphanResults: 1, restoredCalls: 1, insertedAt: 2, unansweredCalls: 0 });
  });

  it('several results, in one tool message or several: one message calls them all', () => {
    const one = repaired([user('go'), tool(result('a'), result('b', 'x', 'read_file'))]);
    expect(calls(one.messages[1])).toEqual([
      { id: 'a', name: 'bash', input: {} },
      { id: 'b', name: 'read_file', input: {} },
    ]);
    expect(one.messages).toHaveLength(3);
    const separate = [user('go'), tool(result('a')), tool(result('b'))];
    const many = repaired(separate);
    expect(many.messages).toHaveLength(4);
    expect(calls(many.messages[1]).map((c) => c.id)).toEqual(['a', 'b']);
    expect(many.messages.slice(2)).toEqual(separate.slice(1));
    expect(many.messages[2]).toBe(separate[1]);
    expect(many.messages[3]).toBe(separate[2]);
    expect(many).toMatchObject({ orphanResults: 2, restoredCalls: 2, insertedAt: 1 });
  });

  it('a result that does not name its tool gets a call that does', () => {
    const r = repaired([user('go'), tool(result('gone', 'x', ''))]);
    expect(calls(r.messages[1])).toEqual([{ id: 'gone', name: 'unknown_tool', input: {} }]);
  });

  it('the only message of the prompt', () => {
    const r = repaired([tool(result('gone'))]);
    expect(r.messages.map((m) => m.role)).toEqual(['assistant', 'tool']);
  });

  it('after an assistant message: the call joins it (no model turn right after a model turn, which Gemini refuses)', () => {
    const said = assistant('I will look at the page.');
    const saidBefore = structuredClone(said);
    const orphan = tool(result('gone'));
    const r = repaired([user('go'), said, orphan]);
    expect(r.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(contentText(r.messages[1] as GuardMessage)).toContain('I will look at the page.');
    expect(calls(r.messages[1])).toEqual([{ id: 'gone', name: 'bash', input: {} }]);
    expect(r.messages[2]).toBe(orphan);
    expect(said).toEqual(saidBefore);
    expect(r).toMatchObject({ orphanResults: 1, restoredCalls: 1, insertedAt: -1 });
    // An assistant message whose content is a string: its text becomes a part before the call.
    const plain: GuardMessage = { role: 'assistant', content: 'Looking.' };
    const p = repaired([user('go'), plain, tool(result('gone'))]);
    expect(p.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Looking.' },
        { type: 'tool-call', toolCallId: 'gone', toolName: 'bash', input: {} },
      ],
    });
    expect(plain.content).toBe('Looking.');
  });

  it('after an assistant message with parts and calls of its own answered later: those stay calls, the orphans join them', () => {
    const owner: GuardMessage = {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Two commands.' },
        { type: 'tool-call', toolCallId: 'a', toolName: 'bash', input: { cmd: 'a' } },
      ],
    };
    const r = repaired([user('go'), owner, tool(result('b')), tool(result('a'))]);
    expect(r.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
    expect(calls(r.messages[1])).toEqual([
      { id: 'a', name: 'bash', input: { cmd: 'a' } },
      { id: 'b', name: 'bash', input: {} },
    ]);
    expect(contentText(r.messages[1] as GuardMessage)).not.toContain('got no result');
    expect(r).toMatchObject({ orphanResults: 1, restoredCalls: 1, unansweredCalls: 0, insertedAt: -1 });
  });

  it('after results that have their call: those keep it, the orphans after them get theirs', () => {
    const [call, answer] = toolStep('a', { path: 'x' }, 'file x') as [GuardMessage, GuardMessage];
    const orphan = tool(result('b'));
    const r = repaired([user('go'), call, answer, orphan]);
    expect(r.messages).toEqual([user('go'), call, answer, expect.anything(), orphan]);
    expect(r.messages[1]).toBe(call);
    expect(r.messages[2]).toBe(answer);
    expect(calls(r.messages[3]).map((c) => c.id)).toEqual(['b']);
    expect(r).toMatchObject({ orphanResults: 1, restoredCalls: 1, insertedAt: 3 });
  });

  it('owned and orphan results interleaved at the end: the call of a result after an orphan moves with it', () => {
    const owner: GuardMessage = {
      role: 'assistant',
      content: [
        { type: 'tool-call', toolCallId: 'a', toolName: 'bash', input: { cmd: 'a' } },
        { type: 'tool-call', toolCallId: 'c', toolName: 'bash', input: { cmd: 'c' } },
      ],
    };
    const r = repaired([user('go'), owner, tool(result('a')), tool(result('b')), tool(result('c'))]);
    expect(r.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'tool']);
    expect(calls(r.messages[3]).map((c) => c.id)).toEqual(['b', 'c']);
    expect(contentText(r.messages[1] as GuardMessage)).toContain('got no result');
  });

  it('owned and orphan results in one tool message: the orphan is dropped, the message stays last', () => {
    const [call] = toolStep('a', {}, 'r') as [GuardMessage];
    const r = repaired([user('go'), call, tool(result('a'), result('b'))]);
    expect(r.messages).toHaveLength(3);
    expect(r).toMatchObject({ orphanResults: 1, restoredCalls: 0, insertedAt: -1 });
  });

  it('an empty tool message at the end is left there, not made a note', () => {
    const step = toolStep('a', {}, 'r');
    const messages = [user('go'), ...step, { role: 'tool', content: [] } as GuardMessage];
    const r = repairToolPairing(messages);
    expect(pairingProblems(r.messages)).toEqual([]);
    expect(r.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
  });

  it('an orphan that no longer ends the prompt is a note, as every other orphan', () => {
    const orphan = tool(result('gone'));
    const r = repairToolPairing([user('go'), orphan, assistant('Done.'), user('Next.')]);
    expect(r.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'assistant', 'user']);
    expect(contentText(r.messages[1] as GuardMessage)).toContain('whose call is no longer in the conversation');
    expect(r).toMatchObject({ orphanResults: 1, restoredCalls: 0, insertedAt: -1 });
  });

  it('a prompt that ends on an assistant message is left ending there (a prefill on purpose)', () => {
    const messages = [user('go'), tool(result('gone')), assistant('The answer is')];
    const r = repairToolPairing(messages);
    expect(r.messages).toHaveLength(3);
    expect(r.messages[2]).toBe(messages[2]);
  });

  it('a valid prompt ending on tool results comes back as the same messages', () => {
    const messages = [user('go'), ...toolStep('a', {}, 'r')];
    const r = repairToolPairing(messages);
    expect(r.messages).toEqual(messages);
    r.messages.forEach((m, i) => expect(m).toBe(messages[i]));
    expect(r).toMatchObject({ orphanResults: 0, restoredCalls: 0, insertedAt: -1 });
  });

  it('from an index, as the guard repairs what was added since its last call', () => {
    const messages = [user('go'), ...toolStep('a', {}, 'r'), assistant('ok'), user('again'), tool(result('gone'))];
    const r = repairToolPairing(messages, { from: 5, copy: false });
    expect(r.messages).not.toBe(messages);
    expect(r.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
      'assistant',
      'tool',
    ]);
    expect(messages).toHaveLength(6);
  });
});

describe('through the guard', () => {
  it('sends the orphan last, after its call, and says so in tool-pairing-repaired', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 200_000, onEvent: ev.onEvent });
    const history = [system('s'), user('Fix the build.'), ...toolStep('a', {}, 'log'), assistant('Next.')];
    // A first call without the orphan (the guard then checks only what is added), then with it.
    const first = await guard.beforeModel({ sessionId: 's', messages: history });
    expect(first.messages).toHaveLength(history.length);
    const messages = [...history, user('And now?'), tool(result('gone'))];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expectInvariants(messages, r);
    expect(r.messages.map((m) => m.role).slice(-3)).toEqual(['user', 'assistant', 'tool']);
    expect(ev.last('tool-pairing-repaired')).toMatchObject({ orphanResults: 1, restoredCalls: 1, unansweredCalls: 0 });
  });

  it('keeps ending on the tool message through a compaction (summary, mechanical digest, hard fit)', async () => {
    for (const summarizer of [async () => '## Task state\nworking', undefined]) {
      const ev = recorder();
      // No pruning and a small tail: the latest step's result, larger than the window, cannot be
      // protected, and the summary's cut falls right at the call given back to the orphan after it
      // (the guard's own message: the summary covers up to the host's tool message after it).
      const guard = createContextGuard({
        contextWindow: 8_000,
        prune: false,
        keepRecentTokens: 300,
        ...(summarizer ? { summarizer } : {}),
        onEvent: ev.onEvent,
      });
      const messages: GuardMessage[] = [system('s'), user('Migrate the service.')];
      for (let i = 0; i < 12; i++)
        messages.push(...toolStep(`c${i}`, { i }, text(`T${i}`, 2_000)), assistant(text(`A${i}`, 400)));
      messages.push(...toolStep('big', {}, text('BIG', 60_000)), tool(result('gone')));
      const r = await guard.beforeModel({ sessionId: 's', messages });
      expect(r.compaction).toBeDefined();
      expectInvariants(messages, r, { overflow: ev.of('overflow').length > 0 });
      expect(r.messages.slice(-2).map((m) => m.role)).toEqual(['assistant', 'tool']);
      expect(r.messages[r.messages.length - 1]).toBe(messages[messages.length - 1]);
      // And the same history again: the memo re-applied gives the same prompt.
      const again = await guard.beforeModel({ sessionId: 's', messages });
      expect(again.messages).toEqual(r.messages);
    }
  });

  it('never ends on an assistant message when even the smallest prompt does not fit', async () => {
    const ev = recorder();
    const guard = createContextGuard({ contextWindow: 4_000, onEvent: ev.onEvent });
    const messages = [system(text('SYS', 20_000)), user('go'), tool(result('gone', text('OUT', 20_000)))];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expectInvariants(messages, r, { overflow: true });
    expect(r.messages[r.messages.length - 1]?.role).not.toBe('assistant');
  });
});
