// The input check compares each call's messages with the last ones once (CheckedInputs, call/history.ts)
// and hands the history over in canonical form: an array that only grows, holding for each
// position the object first seen there with that content. Old messages resent as the same objects
// or rebuilt around the same values are neither checked nor measured again; an old message that
// changed, moved, went missing or became junk is always found.
import { describe, expect, it } from 'vitest';
import type { GuardMessage } from '../../src/index.ts';
import { CheckedInputs, type CheckedInput } from '../../src/call/history.ts';
import { MessageKeys } from '../../src/tokens/prompt-measure.ts';
import { assistant, system, toolStep, user } from '../helpers.ts';

function history(steps: number): GuardMessage[] {
  const out: GuardMessage[] = [system('sys'), user('start')];
  for (let i = 0; i < steps; i++) out.push(...toolStep(`call_${i}`, { path: `f${i}.ts` }, `content ${i} `.repeat(20)));
  return out;
}

/** What the AI SDK does on every step: new message and part objects around the same values. */
const rebuild = (messages: readonly GuardMessage[]): GuardMessage[] =>
  messages.map(
    (m) =>
      ({
        ...m,
        content: Array.isArray(m.content) ? m.content.map((p) => ({ ...p })) : m.content,
      }) as GuardMessage,
  );

/** Wraps an object so that every read of its fields is counted. */
function watched<T extends object>(value: T, reads: { n: number }): T {
  return new Proxy(value, {
    get(target, key, receiver) {
      reads.n++;
      return Reflect.get(target, key, receiver);
    },
  });
}

/** The canonical form a check handed over for its input (to the measure of that very array). */
const formOf = (checked: CheckedInput) => {
  const form = checked.canonical;
  if (!form) throw new Error('no canonical form');
  return form;
};

/** A copy of message `i` of `messages` with `change` applied to its first part (or content). */
function editAt(messages: GuardMessage[], i: number, change: (part: Record<string, unknown>) => void): GuardMessage[] {
  const out = rebuild(messages);
  const m = out[i] as unknown as Record<string, unknown>;
  if (Array.isArray(m['content'])) change(m['content'][0] as Record<string, unknown>);
  else change(m);
  return out;
}

/** A rebuilt copy of `messages` with message `i` replaced by `replace` of it. */
const withMessage = (messages: GuardMessage[], i: number, replace: (m: GuardMessage) => GuardMessage): GuardMessage[] =>
  rebuild(messages).map((m, j) => (j === i ? replace(m) : m));

describe('CheckedInputs', () => {
  it('grows the canonical form in place for a host that resends its objects, reading no old message', () => {
    const c = new CheckedInputs(10);
    const reads = { n: 0 };
    const old = history(20).map((m) => watched(m, reads));
    const first = formOf(c.check('s', old));
    reads.n = 0;
    const next = [...old, user('next')];
    const checked = c.check('s', next);
    expect(checked.dropped).toEqual([]);
    expect(reads.n).toBeLessThan(5); // the new message only
    const second = formOf(checked);
    expect(second.messages).toBe(first.messages);
    expect(second.length).toBe(next.length);
    expect(second.messages.slice(0, second.length)).toEqual(next);
  });

  it('keeps the first objects for messages rebuilt around the same values, without walking their values', () => {
    const c = new CheckedInputs(10);
    const reads = { n: 0 };
    const messages = history(10).map((m) =>
      m.role === 'assistant' && Array.isArray(m.content)
        ? {
            ...m,
            content: m.content.map((p) =>
              p.type === 'tool-call' ? { ...p, input: watched({ deep: { a: 1 } }, reads) } : p,
            ),
          }
        : m,
    ) as GuardMessage[];
    c.check('s', messages);
    reads.n = 0;
    const copies = [...rebuild(messages), user('next')];
    const checked = c.check('s', copies);
    expect(checked.dropped).toEqual([]);
    expect(reads.n).toBe(0);
    const form = formOf(checked);
    expect(form.messages.slice(0, messages.length)).toEqual(messages);
    for (let i = 0; i < messages.length; i++) expect(form.messages[i]).toBe(messages[i]);
    expect(form.messages[messages.length]).toBe(copies[messages.length]);
  });

  const edits: Array<[string, (messages: GuardMessage[]) => GuardMessage[]]> = [
    ['a text', (m) => editAt(m, 1, (x) => void (x['content'] = 'changed'))],
    ['a tool output', (m) => editAt(m, 5, (p) => void (p['output'] = { type: 'text', value: 'other' }))],
    [
      'a tool output of the same length',
      (m) =>
        editAt(m, 5, (p) => void (p['output'] = { type: 'text', value: 'content 1 '.replace('1', '9').repeat(20) })),
    ],
    ['a tool-call id', (m) => editAt(m, 4, (p) => void (p['toolCallId'] = 'other'))],
    ['a tool input', (m) => editAt(m, 4, (p) => void (p['input'] = { path: 'other.ts' }))],
    ['part options', (m) => editAt(m, 4, (p) => void (p['providerOptions'] = { x: { y: 1 } }))],
    ['a role', (m) => editAt(m, 1, (x) => void (x['role'] = 'system'))],
    [
      'a part added',
      (m) =>
        withMessage(
          m,
          4,
          (x) => ({ ...x, content: [...(x.content as []), { type: 'text', text: 'more' }] }) as GuardMessage,
        ),
    ],
    ['a message removed', (m) => rebuild(m).filter((_, i) => i !== 3)],
    [
      'two messages swapped',
      (m) => rebuild(m).map((x, i, all) => (i === 3 ? all[5] : i === 5 ? all[3] : x) as GuardMessage),
    ],
  ];

  for (const host of ['same objects', 'rebuilt'] as const) {
    for (const [what, edit] of edits) {
      it(`finds ${what} in an old message (${host}), and leaves earlier canonical forms as they were`, () => {
        const c = new CheckedInputs(10);
        const messages = history(10);
        const first = host === 'rebuilt' ? rebuild(messages) : messages;
        const before = formOf(c.check('s', first));
        const snapshot = before.messages.slice(0, before.length);
        // Edits copy the message they change: a host resending its objects sends the others as they are.
        const same = (m: GuardMessage) => messages.find((o) => JSON.stringify(o) === JSON.stringify(m)) ?? m;
        const changed = host === 'same objects' ? edit(messages).map(same) : edit(messages);
        const checked = c.check('s', changed);
        expect(checked.dropped).toEqual([]);
        const after = formOf(checked);
        const differs = changed.findIndex((m, i) => JSON.stringify(m) !== JSON.stringify(messages[i]));
        expect(differs).toBeGreaterThan(0);
        // The canonical form holds the new content from the first change on, in a new array.
        expect(after.messages).not.toBe(before.messages);
        expect(after.messages.slice(0, after.length)).toEqual(changed);
        expect(after.messages[differs]).toBe(changed[differs]);
        expect(before.messages.slice(0, before.length)).toEqual(snapshot);
      });
    }

    it(`drops junk in an old place and remembers nothing of that input (${host})`, () => {
      const c = new CheckedInputs(10);
      const messages = history(10);
      c.check('s', host === 'rebuilt' ? rebuild(messages) : messages);
      for (const junk of [null, 42, 'text', { role: 'wizard', content: 'x' }, { content: 'no role' }]) {
        const input: unknown[] = host === 'rebuilt' ? rebuild(messages) : messages.slice();
        input[4] = junk;
        const checked = c.check('s', input);
        expect(checked.dropped).toEqual([4]);
        expect(checked.canonical).toBeUndefined();
        expect(checked.messages).toEqual(messages.filter((_, i) => i !== 4));
      }
      // The next call checks every entry again.
      const again = host === 'rebuilt' ? rebuild(messages) : messages;
      const checked = c.check('s', again);
      expect(checked.dropped).toEqual([]);
      expect(formOf(checked).messages.slice(0, messages.length)).toEqual(messages);
    });
  }

  it('finds a cycle put into an old tool input of a rebuilt message', () => {
    const c = new CheckedInputs(10);
    const messages = history(5);
    c.check('s', rebuild(messages));
    const cyclic: Record<string, unknown> = { path: 'a.ts' };
    cyclic['self'] = cyclic;
    const input = editAt(messages, 4, (p) => void (p['input'] = cyclic));
    expect(c.check('s', input).dropped).toEqual([4]);
  });

  it('finds an array changed in place and resent', () => {
    const c = new CheckedInputs(10);
    const messages = history(5);
    c.check('s', messages);
    messages[3] = assistant('edited in place');
    expect(formOf(c.check('s', messages)).messages[3]).toBe(messages[3]);
    messages[4] = null as unknown as GuardMessage;
    expect(c.check('s', messages).dropped).toEqual([4]);
  });

  it('treats an old message whose fields cannot be read any more as changed, and never throws', () => {
    const c = new CheckedInputs(10);
    const messages = history(5);
    c.check('s', rebuild(messages));
    const hostile = rebuild(messages);
    Object.defineProperty(hostile[3], 'role', {
      get() {
        throw new Error('unreadable');
      },
    });
    const checked = c.check('s', hostile);
    expect(checked.dropped).toEqual([3]);
    expect(checked.reasons[0]).toMatch(/cannot be read/);
  });

  it('forgets sessions beyond its bound', () => {
    const c = new CheckedInputs(2);
    for (const id of ['a', 'b', 'c']) c.check(id, history(1));
    expect((c as unknown as { last: Map<string, unknown> }).last.size).toBe(2);
  });
});

describe('MessageKeys', () => {
  it('matches copies and stops at the first message whose content differs', () => {
    const keys = new MessageKeys();
    const messages = history(5);
    for (const m of messages) keys.push(m);
    expect(keys.matching(rebuild(messages), [], 0, messages.length)).toBe(messages.length);
    const changed = editAt(messages, 6, (p) => void (p['toolName'] = 'write_file'));
    expect(keys.matching(changed, [], 0, messages.length)).toBe(6);
    keys.truncate(3);
    expect(keys.length).toBe(3);
    expect(keys.matching(rebuild(messages), [], 0, messages.length)).toBe(3);
  });

  it('compares images, files, unknown parts and parts that are not objects', () => {
    const keys = new MessageKeys();
    const messages = [
      { role: 'user', content: [{ type: 'image', image: 'aGVsbG8=', mediaType: 'image/png' }] },
      { role: 'user', content: [{ type: 'file', data: 'aGVsbG8=', mediaType: 'application/pdf', filename: 'a.pdf' }] },
      { role: 'assistant', content: [{ type: 'custom', value: { a: [1, 2] } }, null] },
    ] as unknown as GuardMessage[];
    for (const m of messages) keys.push(m);
    const copies = structuredClone(messages);
    expect(keys.matching(copies, [], 0, 3)).toBe(3);
    const edit = (i: number, field: string, value: unknown) => {
      const c = structuredClone(messages) as unknown as Array<{ content: Array<Record<string, unknown>> }>;
      (c[i]?.content[0] as Record<string, unknown>)[field] = value;
      return keys.matching(c as unknown as GuardMessage[], [], 0, 3);
    };
    expect(edit(0, 'image', 'd29ybGQ=')).toBe(0);
    expect(edit(0, 'mediaType', 'image/jpeg')).toBe(0);
    expect(edit(1, 'filename', 'b.pdf')).toBe(1);
    expect(edit(2, 'value', { a: [1, 3] })).toBe(2);
    const nonObject = structuredClone(messages) as unknown as Array<{ content: unknown[] }>;
    (nonObject[2] as { content: unknown[] }).content[1] = 5;
    expect(keys.matching(nonObject as unknown as GuardMessage[], [], 0, 3)).toBe(2);
  });
});
