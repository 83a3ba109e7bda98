// The scenarios of the cost bench: the shapes of the acceptance simulation (test/compaction/
// simulation.test.ts: a tool-heavy coding agent, a plain chat, a host without usage), sized as
// fractions of the window in real tokens so that every window behaves alike, with the fake
// provider of test/compaction/simulation.ts (real tokens = ratio × chars/4 + framing).
import type { GuardMessage, ToolDefinition } from '../../src/index.ts';
import { charsFor, prose, SYSTEM, TOOLS, type ProviderModel } from '../../test/compaction/simulation.ts';

export { SYSTEM, TOOLS };

export type Shape = 'tool-heavy' | 'chat' | 'no-usage';
export const SHAPES: readonly Shape[] = ['tool-heavy', 'chat', 'no-usage'];
export const WINDOWS: readonly number[] = [4_000, 32_000, 128_000, 200_000, 1_000_000];

/** One model call: what the host appends before it, and what the model answers (with the tool results). */
export interface Call {
  before: GuardMessage[];
  reply: GuardMessage[];
}

export interface Scenario {
  name: string;
  window: number;
  shape: Shape;
  provider: ProviderModel;
  /** Whether the host reports usage through afterModel. */
  usage: boolean;
  system: GuardMessage;
  tools: ToolDefinition[];
  calls: Call[];
}

/** Sizes, as fractions of the window in real tokens: about 1.1% of the window added per call. */
const TOOL_OUTPUT = 0.012;
const TALK = 0.004;
const TOOL_STEPS = 4;
const CHAT_STEP = 0.012;

function reply(i: number, r: { text: string } | { toolName: string; input: unknown; output: string }): GuardMessage[] {
  if ('text' in r) return [{ role: 'assistant', content: [{ type: 'text', text: r.text }] }];
  const toolCallId = `call_${i}_0`;
  return [
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId, toolName: r.toolName, input: r.input }] },
    {
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId, toolName: r.toolName, output: { type: 'text', value: r.output } }],
    },
  ];
}

/** The coding agent of the simulation: a user request, TOOL_STEPS tool calls (read_file, bash), a final answer. */
function agentCall(window: number, ratio: number, i: number): Call {
  const text = (label: string, fraction: number) => prose(label, charsFor(window * fraction, ratio));
  const turn = TOOL_STEPS + 1;
  const k = i % turn;
  const before: GuardMessage[] =
    k === 0
      ? [{ role: 'user', content: text(`user request ${i / turn}: fix the failing test in module ${i}`, TALK) }]
      : [];
  if (k === turn - 1)
    return { before, reply: reply(i, { text: text(`done with turn ${Math.floor(i / turn)}`, TALK) }) };
  const call =
    k % 2 === 0
      ? {
          toolName: 'read_file',
          input: { path: `src/module-${i}.ts` },
          output: text(`contents of src/module-${i}.ts`, TOOL_OUTPUT),
        }
      : {
          toolName: 'bash',
          input: { command: `npm test -- module-${i}` },
          output: text(`test output ${i}`, TOOL_OUTPUT),
        };
  return { before, reply: reply(i, call) };
}

/** Plain chat: a user message and a text answer per call. */
function chatCall(window: number, ratio: number, i: number): Call {
  const text = (label: string, fraction: number) => prose(label, charsFor(window * fraction, ratio));
  return {
    before: [{ role: 'user', content: text(`user request ${i}: please look at this`, CHAT_STEP * 0.4) }],
    reply: reply(i, { text: text(`answer ${i}`, CHAT_STEP * 0.6) }),
  };
}

/** A fresh scenario (new message objects: each system under test gets its own). */
export function buildScenario(window: number, shape: Shape, calls: number): Scenario {
  // As in the simulation: ratio 1.2 with usage, 1.3 for the host that never reports it.
  const ratio = shape === 'no-usage' ? 1.3 : 1.2;
  const make = shape === 'chat' ? chatCall : agentCall;
  return {
    name: `${window / 1000}k ${shape}`,
    window,
    shape,
    provider: { ratio, invisibleTokens: 0, pdfPageTokens: 2500 },
    usage: shape !== 'no-usage',
    system: { role: 'system', content: SYSTEM },
    tools: TOOLS.map((t) => ({ ...t })),
    calls: Array.from({ length: calls }, (_, i) => make(window, ratio, i)),
  };
}
