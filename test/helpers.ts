// Small builders shared by the tests.
import type { ContextGuardEvent, GuardMessage } from '../src/index.ts';

export const user = (text: string): GuardMessage => ({ role: 'user', content: text });
export const assistant = (text: string): GuardMessage => ({ role: 'assistant', content: [{ type: 'text', text }] });
export const system = (text: string): GuardMessage => ({ role: 'system', content: text });

export function toolStep(id: string, input: unknown, result: string, toolName = 'read_file'): GuardMessage[] {
  return [
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName, input }] },
    {
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: id, toolName, output: { type: 'text', value: result } }],
    },
  ];
}

/** Collects events by type. */
export function recorder() {
  const events: ContextGuardEvent[] = [];
  return {
    events,
    onEvent: (e: ContextGuardEvent) => {
      events.push(e);
    },
    of<T extends ContextGuardEvent['type']>(type: T): Extract<ContextGuardEvent, { type: T }>[] {
      return events.filter((e): e is Extract<ContextGuardEvent, { type: T }> => e.type === type);
    },
    last<T extends ContextGuardEvent['type']>(type: T): Extract<ContextGuardEvent, { type: T }> {
      const all = this.of(type);
      const e = all[all.length - 1];
      if (!e) throw new Error(`no ${type} event`);
      return e;
    },
  };
}
