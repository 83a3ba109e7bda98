// A guarded agent loop without any framework, runnable offline: `node examples/quickstart.ts`.
// The "model" is a stand-in that answers with a tool call and reports usage like a provider would
// (about 1 token per 3 characters plus a hidden 2,000-token system prompt).
import { createContextGuard, type GuardMessage } from 'context-guard';

let realCounts = 0;
const guard = createContextGuard({
  contextWindow: 32_000,
  onEvent: (e) => {
    if (e.type === 'warning') console.log(`  warning: context at ${Math.round(e.fraction * 100)}%`);
    if (e.type === 'usage-recorded') {
      // The first real count reveals what the text does not show (this fake provider adds a
      // 2,000-token hidden system prompt): that estimate is far off; from then on each estimate
      // is anchored on the last real count, and only what was added since is estimated.
      const note = ++realCounts === 1 ? ' (the first real count: the hidden prompt was not known yet)' : '';
      console.log(`  estimate was ${(e.relativeError * 100).toFixed(1)}% off the real count${note}`);
    }
  },
});

const tools = [
  {
    name: 'read_file',
    description: 'Read a file',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
  },
];

function fakeModel(messages: GuardMessage[], step: number) {
  const chars = JSON.stringify(messages).length + JSON.stringify(tools).length;
  const response: GuardMessage = {
    role: 'assistant',
    content: [
      { type: 'tool-call', toolCallId: `call-${step}`, toolName: 'read_file', input: { path: `src/file-${step}.ts` } },
    ],
  };
  return { response, usage: { inputTokens: 2_000 + Math.round(chars / 3), outputTokens: 25 } };
}

let messages: GuardMessage[] = [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: 'Read the source files one by one.' },
];

for (let step = 0; step < 8; step++) {
  const r = await guard.beforeModel({ sessionId: 'demo', messages, tools });
  console.log(`step ${step}: [ctx: ${Math.round(r.fraction * 100)}%] ~${r.tokens} tokens (threshold ${r.threshold})`);
  const { response, usage } = fakeModel(r.messages, step);
  await guard.afterModel({ sessionId: 'demo', usage });
  const result: GuardMessage = {
    role: 'tool',
    content: [
      {
        type: 'tool-result',
        toolCallId: `call-${step}`,
        toolName: 'read_file',
        output: { type: 'text', value: 'export const x = 1;\n'.repeat(150) },
      },
    ],
  };
  messages = [...messages, response, result];
}
console.log(await guard.status('demo'));
