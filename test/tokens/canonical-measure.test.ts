// Measuring a host's history in canonical form (PromptMeasurer.measureCanonical): when the last
// measure was of the same canonical array, the messages it covered are not looked at again; any
// other measure in between, or another array, makes it compare message by message as usual.
import { describe, expect, it } from 'vitest';
import type { GuardMessage } from '../../src/index.ts';
import { CHARACTER_MEASURE } from '../../src/tokens/exact.ts';
import { PromptMeasurer } from '../../src/tokens/prompt-measure.ts';
import { toolStep, user } from '../helpers.ts';

function history(turns: number): GuardMessage[] {
  const out: GuardMessage[] = [user('start')];
  for (let i = 0; i < turns; i++) out.push(...toolStep(`call-${i}`, { path: `f${i}.ts` }, `content ${i} `.repeat(50)));
  return out;
}

/** Wraps a message so that every read of its fields is counted. */
function watched(message: GuardMessage, reads: { n: number }): GuardMessage {
  return new Proxy(message, {
    get(target, key, receiver) {
      reads.n++;
      return Reflect.get(target, key, receiver);
    },
  });
}

const measure = (m: PromptMeasurer, messages: GuardMessage[]) =>
  m.measure('s', messages, undefined, 'generic', CHARACTER_MEASURE);
const canonical = (m: PromptMeasurer, messages: GuardMessage[], length = messages.length) =>
  m.measureCanonical('s', { messages, length, rebuilt: false }, undefined, 'generic', CHARACTER_MEASURE);

describe('PromptMeasurer.measureCanonical', () => {
  it('measures what measure() measures, and reads no message it measured in the same array before', () => {
    const m = new PromptMeasurer(10);
    const reads = { n: 0 };
    const canon = history(20).map((msg) => watched(msg, reads));
    const first = canonical(m, canon);
    expect(first.chars).toBe(measure(new PromptMeasurer(10), canon).chars);
    reads.n = 0;
    canon.push(user('next'));
    const second = canonical(m, canon);
    expect(reads.n).toBe(0);
    expect(second.unchanged).toBe(canon.length - 1);
    expect(second.chars).toBe(measure(new PromptMeasurer(10), canon).chars);
    expect(second.prompt).toEqual(measure(new PromptMeasurer(10), canon).prompt);
  });

  it('measures only the first `length` messages of the array', () => {
    const m = new PromptMeasurer(10);
    const canon = history(5);
    canonical(m, canon);
    canon.push(user('added by a later call'));
    const r = canonical(m, canon, canon.length - 1);
    expect(r.prompt.messages).toBe(canon.length - 1);
    expect(r.chars).toBe(measure(new PromptMeasurer(10), canon.slice(0, -1)).chars);
  });

  it('compares message by message after a measure of another prompt, or for another array', () => {
    const m = new PromptMeasurer(10);
    const canon = history(5);
    canonical(m, canon);
    // A compaction measured another prompt in between: the entries describe it now.
    measure(m, [user('summary'), ...canon.slice(4)]);
    const r = canonical(m, canon);
    expect(r.chars).toBe(measure(new PromptMeasurer(10), canon).chars);
    expect(r.unchanged).toBe(0);
    // A new canonical array (the host edited an old message): its messages are compared.
    const edited = [...canon.slice(0, 3), user('edited'), ...canon.slice(4)];
    const e = canonical(m, edited);
    expect(e.unchanged).toBe(3);
    expect(e.chars).toBe(measure(new PromptMeasurer(10), edited).chars);
    expect(e.prompt.hash).not.toBe(r.prompt.hash);
  });

  it('starts over when the measure changes kind (another media provider or text measure)', () => {
    const m = new PromptMeasurer(10);
    const canon = history(3);
    canonical(m, canon);
    const r = m.measureCanonical(
      's',
      { messages: canon, length: canon.length, rebuilt: false },
      undefined,
      'anthropic',
      CHARACTER_MEASURE,
    );
    expect(r.unchanged).toBe(0);
  });
});
