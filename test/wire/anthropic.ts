// Anthropic Messages on the wire (`POST /v1/messages`): JSON and SSE answers (message_start,
// content_block_start / _delta / _stop, message_delta, message_stop), usage with the cache reported
// apart from `input_tokens` (`cache_read_input_tokens`, `cache_creation_input_tokens`: the total is
// the sum), signed thinking blocks, and the real rejections: "prompt is too long: N tokens > M
// maximum", the `tool_use` / `tool_result` pairing errors, an invalid thinking signature, and the
// refusal of an assistant prefill by Claude models from 4.6 on (a request whose last message is an
// assistant message: vercel/ai#12296).
import { json, sign, sse, type Dialect, type ReadRequest } from './fake-provider.ts';

type Obj = Record<string, unknown>;

function blocksOf(content: unknown): Obj[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? (content as Obj[]) : [];
}

const idsOf = (blocks: Obj[], type: string, key: string) =>
  blocks.filter((b) => b['type'] === type).map((b) => String(b[key]));

const textOf = (content: unknown): string =>
  blocksOf(content)
    .map((b) => (b['type'] === 'text' && typeof b['text'] === 'string' ? b['text'] : ''))
    .join('');

/** Models that refuse an assistant prefill: Claude Sonnet and Opus 4.6 and later. */
const NO_PREFILL = /^claude-(?:opus|sonnet)-(?:4-(?:[6-9]|\d\d)|[5-9])(?:\D|$)/;

/** The refusal's own message, as the API sends it. */
export const PREFILL_REJECTED =
  'This model does not support assistant message prefill. The conversation must end with a user message.';

export const anthropic: Dialect = {
  name: 'anthropic',

  read(_url, body): ReadRequest {
    const messages = (Array.isArray(body['messages']) ? body['messages'] : []) as Obj[];
    const system = textOf(body['system']);
    const problems: ReadRequest['problems'] = [];
    const invalid = (message: string) => problems.push({ rejection: 'pairing', status: 400, message });
    messages.forEach((m, i) => {
      const blocks = blocksOf(m['content']);
      const previous = i > 0 ? blocksOf(messages[i - 1]!['content']) : [];
      const uses = m['role'] === 'assistant' ? idsOf(blocks, 'tool_use', 'id') : [];
      if (uses.length > 0) {
        const next = messages[i + 1];
        const results = new Set(
          next?.['role'] === 'user' ? idsOf(blocksOf(next['content']), 'tool_result', 'tool_use_id') : [],
        );
        const missing = uses.filter((id) => !results.has(id));
        if (missing.length > 0) {
          invalid(
            `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. ` +
              'Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
          );
        }
      }
      blocks.forEach((b, j) => {
        if (m['role'] === 'user' && b['type'] === 'tool_result') {
          const owner = messages[i - 1]?.['role'] === 'assistant' ? idsOf(previous, 'tool_use', 'id') : [];
          if (!owner.includes(String(b['tool_use_id']))) {
            invalid(
              `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(b['tool_use_id'])}. ` +
                'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
            );
          }
        }
        if (
          b['type'] === 'tool_use' &&
          (typeof b['input'] !== 'object' || b['input'] === null || Array.isArray(b['input']))
        ) {
          invalid(`messages.${i}.content.${j}.tool_use.input: Input should be a valid dictionary`);
        }
        if (b['type'] === 'thinking' && b['signature'] !== sign(String(b['thinking']))) {
          const message = `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`;
          problems.push({ rejection: 'signature', status: 400, message });
        }
      });
    });
    if (NO_PREFILL.test(String(body['model'])) && messages[messages.length - 1]?.['role'] === 'assistant')
      problems.push({ rejection: 'prefill', status: 400, message: PREFILL_REJECTED });
    // User messages: user turns with something besides tool results.
    const users = messages.filter(
      (m) => m['role'] === 'user' && blocksOf(m['content']).some((b) => b['type'] !== 'tool_result'),
    );
    return {
      counted: { system: body['system'] ?? '', messages, tools: body['tools'] ?? [] },
      system,
      userTexts: users.map((m) => textOf(m['content'])),
      references: [],
      problems,
      stream: body['stream'] === true,
    };
  },

  error(problem) {
    const body = {
      type: 'error',
      error: { type: 'invalid_request_error', message: problem.message },
      request_id: 'req_fake',
    };
    return json(problem.status, body, { 'request-id': 'req_fake' });
  },

  contextLength(tokens, window) {
    return { status: 400, message: `prompt is too long: ${tokens} tokens > ${window} maximum` };
  },

  answer(turn, usage, { body, stream, ids }) {
    const id = ids.next('msg_');
    const model = String(body['model']);
    const content: Obj[] = [];
    if (turn.reasoning !== undefined)
      content.push({ type: 'thinking', thinking: turn.reasoning, signature: sign(turn.reasoning) });
    if (turn.text !== undefined) content.push({ type: 'text', text: turn.text });
    for (const c of turn.calls ?? [])
      content.push({ type: 'tool_use', id: ids.next('toolu_'), name: c.name, input: c.args });
    const stop_reason = (turn.calls ?? []).length > 0 ? 'tool_use' : 'end_turn';
    // The cache is reported apart: input_tokens is only what was neither read from nor written to it.
    const input = {
      input_tokens: usage.total - usage.cached - usage.cacheWrite,
      cache_creation_input_tokens: usage.cacheWrite,
      cache_read_input_tokens: usage.cached,
    };
    if (!stream) {
      const final = { ...input, output_tokens: usage.output, service_tier: 'standard' };
      return json(200, {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content,
        stop_reason,
        stop_sequence: null,
        usage: final,
      });
    }
    const events: Array<{ event: string; data: Obj }> = [];
    const emit = (type: string, data: Obj) => events.push({ event: type, data: { type, ...data } });
    const start = { ...input, output_tokens: 1, service_tier: 'standard' };
    emit('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: start,
      },
    });
    content.forEach((block, index) => {
      if (block['type'] === 'thinking') {
        emit('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
        emit('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: block['thinking'] } });
        emit('content_block_delta', { index, delta: { type: 'signature_delta', signature: block['signature'] } });
      } else if (block['type'] === 'text') {
        const text = String(block['text']);
        emit('content_block_start', { index, content_block: { type: 'text', text: '' } });
        const mid = Math.floor(text.length / 2);
        for (const piece of mid > 0 ? [text.slice(0, mid), text.slice(mid)] : [text]) {
          emit('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
        }
      } else {
        emit('content_block_start', {
          index,
          content_block: { type: 'tool_use', id: block['id'], name: block['name'], input: {} },
        });
        emit('content_block_delta', {
          index,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(block['input']) },
        });
      }
      emit('content_block_stop', { index });
    });
    // The final usage is cumulative: the output, and the same input counts again.
    emit('message_delta', {
      delta: { stop_reason, stop_sequence: null },
      usage: { ...input, output_tokens: usage.output },
    });
    emit('message_stop', {});
    return sse(events);
  },
};
