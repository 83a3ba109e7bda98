// The synthetic history of the per-call overhead benches (overhead.ts, overhead-vs.ts): each step an
// assistant message calling read_file and the tool's ~3,000-character answer, code-like text.
import type { GuardMessage, ToolDefinition } from '../src/index.ts';

const RESULT_CHARS = 3_000;

/** A linear congruential generator (the benches' figures were taken with this exact sequence). */
export function lcg(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

/** Code-like text of about 3,000 characters, different on every call so no string is shared by accident. */
export function fileText(step: number, random: () => number): string {
  const lines: string[] = [];
  let length = 0;
  while (length < RESULT_CHARS) {
    const line = `  const value${step}_${lines.length} = compute(${Math.floor(random() * 1e6)}, "${random().toString(36).slice(2)}");`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join('\n');
}

/** The conversation before the first step: the agent's system prompt and the user's request. */
export const firstMessages = (): GuardMessage[] => [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: 'Read the whole repository.' },
];

/** Step `i`: the assistant's read_file call and the tool message answering it with `text`. */
export function toolStep(i: number, text: string): GuardMessage[] {
  const id = `call_${i}`;
  return [
    {
      role: 'assistant',
      content: [
        { type: 'text', text: `Reading file ${i}.` },
        { type: 'tool-call', toolCallId: id, toolName: 'read_file', input: { path: `src/module_${i}.ts` } },
      ],
    },
    {
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: id, toolName: 'read_file', output: { type: 'text', value: text } }],
    },
  ];
}

/** What the AI SDK does each step: new message and part objects around the same strings. */
export const rebuild = (messages: GuardMessage[]): GuardMessage[] =>
  messages.map(
    (m) => ({ ...m, content: Array.isArray(m.content) ? m.content.map((p) => ({ ...p })) : m.content }) as GuardMessage,
  );

/** The one tool the steps call. */
export const readFileTools: ToolDefinition[] = [
  {
    name: 'read_file',
    description: 'Read a file of the repository',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
];
