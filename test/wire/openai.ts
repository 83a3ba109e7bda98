// OpenAI on the wire: Chat Completions (`POST /v1/chat/completions`) and Responses
// (`POST /v1/responses`), with their JSON and SSE answers, usage with the cached share
// (`prompt_tokens_details.cached_tokens`, `input_tokens_details.cached_tokens`, both part of the
// total), and their real rejections: the context-length errors (Chat Completions reports the count,
// "N in the messages, M in the functions"; Responses does not), the tool-pairing 400s, and
// Responses' "Item with id … not found" for a reference to an item it never stored.
import { json, sse, type Dialect, type ReadRequest, type ReportedUsage } from './fake-provider.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text of an OpenAI content (a string, or parts with `text`). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (isObj(p) && typeof p['text'] === 'string' ? p['text'] : '')).join('');
}

function openaiError(
  problem: { status: number; message: string; param?: string },
  code: string | null = null,
): Response {
  return json(problem.status, {
    error: { message: problem.message, type: 'invalid_request_error', param: problem.param ?? null, code },
  });
}

function contextError(problem: { status: number; message: string; param?: string; rejection: string }): Response {
  return openaiError(problem, problem.rejection === 'context-length' ? 'context_length_exceeded' : null);
}

const created = 1_760_000_000;

// ---------------------------------------------------------------------------------------------
// Chat Completions
// ---------------------------------------------------------------------------------------------

export const openaiChat: Dialect = {
  name: 'openai-chat',

  read(_url, body): ReadRequest {
    const messages = (Array.isArray(body['messages']) ? body['messages'] : []) as Obj[];
    const system = messages
      .filter((m) => m['role'] === 'system' || m['role'] === 'developer')
      .map((m) => textOf(m['content']))
      .join('\n');
    const users = messages.filter((m) => m['role'] === 'user');
    const problems: ReadRequest['problems'] = [];
    // An assistant message with tool calls must be followed by a tool message for each call; a tool
    // message must answer a call of the assistant message before it.
    let open: { index: number; ids: Set<string> } | undefined;
    const unanswered = () => {
      if (open && open.ids.size > 0) {
        problems.push({
          rejection: 'pairing',
          status: 400,
          param: 'messages',
          message:
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
            `The following tool_call_ids did not have response messages: ${[...open.ids].join(', ')}`,
        });
      }
    };
    messages.forEach((m, i) => {
      if (m['role'] === 'tool') {
        const id = String(m['tool_call_id']);
        if (!open?.ids.delete(id)) {
          problems.push({
            rejection: 'pairing',
            status: 400,
            param: `messages.[${i}].role`,
            message:
              "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          });
        }
        return;
      }
      unanswered();
      const calls = m['role'] === 'assistant' && Array.isArray(m['tool_calls']) ? (m['tool_calls'] as Obj[]) : [];
      open = calls.length > 0 ? { index: i, ids: new Set(calls.map((c) => String(c['id']))) } : undefined;
    });
    unanswered();
    return {
      counted: { messages, tools: body['tools'] ?? [] },
      system,
      userTexts: users.map((m) => textOf(m['content'])),
      references: [],
      problems,
      stream: body['stream'] === true,
    };
  },

  error: contextError,

  contextLength(tokens, window, tools) {
    const head = `This model's maximum context length is ${window} tokens. However, your messages resulted in ${tokens} tokens`;
    const message =
      tools > 0
        ? `${head} (${tokens - tools} in the messages, ${tools} in the functions). Please reduce the length of the messages or functions.`
        : `${head}. Please reduce the length of the messages.`;
    return { status: 400, param: 'messages', message };
  },

  answer(turn, usage, { body, stream, ids }) {
    const id = ids.next('chatcmpl-');
    const model = String(body['model']);
    const calls = (turn.calls ?? []).map((c) => ({
      id: ids.next('call_'),
      type: 'function',
      function: { name: c.name, arguments: JSON.stringify(c.args) },
    }));
    const finish = calls.length > 0 ? 'tool_calls' : 'stop';
    const wireUsage = {
      prompt_tokens: usage.total,
      completion_tokens: usage.output,
      total_tokens: usage.total + usage.output,
      prompt_tokens_details: { cached_tokens: usage.cached, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    };
    if (!stream) {
      return json(200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: turn.text ?? null,
              refusal: null,
              ...(calls.length > 0 ? { tool_calls: calls } : {}),
              annotations: [],
            },
            logprobs: null,
            finish_reason: finish,
          },
        ],
        usage: wireUsage,
        service_tier: 'default',
        system_fingerprint: 'fp_fake',
      });
    }
    const chunk = (choices: unknown[], extra: Obj = {}) => ({
      data: { id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_fake', choices, ...extra },
    });
    const delta = (d: Obj, finish_reason: string | null = null) =>
      chunk([{ index: 0, delta: d, logprobs: null, finish_reason }]);
    const events = [delta({ role: 'assistant', content: '', refusal: null })];
    if (turn.text) for (const piece of halves(turn.text)) events.push(delta({ content: piece }));
    calls.forEach((c, index) => {
      events.push(
        delta({
          tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }],
        }),
      );
      for (const piece of halves(c.function.arguments))
        events.push(delta({ tool_calls: [{ index, function: { arguments: piece } }] }));
    });
    events.push(delta({}, finish));
    if ((body['stream_options'] as Obj | undefined)?.['include_usage'] === true)
      events.push(chunk([], { usage: wireUsage }));
    return sse([...events, { data: '[DONE]' }]);
  },
};

/** A text in two pieces, so that streams have several deltas. */
function halves(text: string): string[] {
  const mid = Math.floor(text.length / 2);
  return mid === 0 ? [text] : [text.slice(0, mid), text.slice(mid)];
}

// ---------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------

/** The input with every `item_reference` replaced by the item it names; unknown ids are listed. */
function expand(
  input: Obj[],
  store: ReadonlyMap<string, unknown>,
): { items: Obj[]; references: string[]; missing: string[] } {
  const references: string[] = [];
  const missing: string[] = [];
  const items = input.map((item) => {
    if (item['type'] !== 'item_reference') return item;
    const id = String(item['id']);
    references.push(id);
    const stored = store.get(id) as Obj | undefined;
    if (!stored) missing.push(id);
    return stored ?? item;
  });
  return { items, references, missing };
}

export const openaiResponses: Dialect = {
  name: 'openai-responses',

  read(_url, body, store): ReadRequest {
    const input =
      typeof body['input'] === 'string' ? [{ role: 'user', content: body['input'] }] : ((body['input'] ?? []) as Obj[]);
    const { items, references, missing } = expand(input, store);
    const instructions = typeof body['instructions'] === 'string' ? body['instructions'] : '';
    const systemItems = items.filter((i) => i['role'] === 'system' || i['role'] === 'developer');
    const system = [instructions, ...systemItems.map((i) => textOf(i['content']))].join('\n');
    const users = items.filter((i) => i['role'] === 'user' && (i['type'] === undefined || i['type'] === 'message'));
    const problems: ReadRequest['problems'] = missing.map((id) => ({
      rejection: 'reference' as const,
      status: 404,
      param: 'input',
      message: `Item with id '${id}' not found.`,
    }));
    const unpaired = (message: string) => problems.push({ rejection: 'pairing', status: 400, param: 'input', message });
    // Calls and outputs pair by call_id anywhere in the input (an output after its call).
    const calls = new Set<string>();
    const answered = new Set<string>();
    for (const item of items) {
      if (item['type'] === 'function_call') calls.add(String(item['call_id']));
      if (item['type'] === 'function_call_output') {
        const id = String(item['call_id']);
        if (!calls.has(id)) unpaired(`No tool call found for function call output with call_id ${id}.`);
        answered.add(id);
      }
    }
    for (const id of calls) {
      if (!answered.has(id)) unpaired(`No tool output found for function call ${id}.`);
    }
    return {
      counted: { instructions, input: items, tools: body['tools'] ?? [] },
      system,
      userTexts: users.map((m) => textOf(m['content'])),
      references,
      problems,
      stream: body['stream'] === true,
    };
  },

  error: contextError,

  contextLength() {
    const message = 'Your input exceeds the context window of this model. Please adjust your input and try again.';
    return { status: 400, param: 'input', message };
  },

  answer(turn, usage, { body, stream, ids, store }) {
    const id = ids.next('resp_');
    const model = String(body['model']);
    const output: Obj[] = [];
    if (turn.reasoning !== undefined) {
      output.push({
        type: 'reasoning',
        id: ids.next('rs_'),
        summary: [{ type: 'summary_text', text: turn.reasoning }],
      });
    }
    if (turn.text !== undefined) {
      const content = [{ type: 'output_text', text: turn.text, annotations: [], logprobs: [] }];
      output.push({ type: 'message', id: ids.next('msg_'), status: 'completed', role: 'assistant', content });
    }
    for (const c of turn.calls ?? []) {
      const call = { call_id: ids.next('call_'), name: c.name, arguments: JSON.stringify(c.args), status: 'completed' };
      output.push({ type: 'function_call', id: ids.next('fc_'), ...call });
    }
    // `store` is on unless the request turned it off: the output can be referenced by id later.
    if (body['store'] !== false) for (const item of output) store.set(String(item['id']), item);
    const response = (status: string, out: Obj[], u: ReportedUsage | undefined) => ({
      id,
      object: 'response',
      created_at: created,
      status,
      background: false,
      error: null,
      incomplete_details: null,
      instructions: body['instructions'] ?? null,
      max_output_tokens: null,
      model,
      output: out,
      parallel_tool_calls: true,
      previous_response_id: null,
      reasoning: { effort: null, summary: null },
      service_tier: 'default',
      store: body['store'] !== false,
      temperature: 1,
      text: { format: { type: 'text' }, verbosity: 'medium' },
      tool_choice: 'auto',
      tools: body['tools'] ?? [],
      top_p: 1,
      truncation: 'disabled',
      usage: u
        ? {
            input_tokens: u.total,
            input_tokens_details: { cached_tokens: u.cached },
            output_tokens: u.output,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: u.total + u.output,
          }
        : null,
      user: null,
      metadata: {},
    });
    if (!stream) return json(200, response('completed', output, usage));
    let seq = 0;
    const events: Array<{ event: string; data: Obj }> = [];
    const emit = (type: string, data: Obj) =>
      events.push({ event: type, data: { type, sequence_number: seq++, ...data } });
    emit('response.created', { response: response('in_progress', [], undefined) });
    emit('response.in_progress', { response: response('in_progress', [], undefined) });
    output.forEach((item, output_index) => {
      const itemId = String(item['id']);
      if (item['type'] === 'message') {
        const text = String(((item['content'] as Obj[])[0] as Obj)['text']);
        emit('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
        const at = { item_id: itemId, output_index, content_index: 0 };
        emit('response.content_part.added', {
          ...at,
          part: { type: 'output_text', annotations: [], logprobs: [], text: '' },
        });
        for (const delta of halves(text)) emit('response.output_text.delta', { ...at, delta, logprobs: [] });
        emit('response.output_text.done', { ...at, text, logprobs: [] });
        emit('response.content_part.done', {
          ...at,
          part: { type: 'output_text', annotations: [], logprobs: [], text },
        });
      } else if (item['type'] === 'function_call') {
        const args = String(item['arguments']);
        emit('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } });
        for (const delta of halves(args))
          emit('response.function_call_arguments.delta', { item_id: itemId, output_index, delta });
        emit('response.function_call_arguments.done', { item_id: itemId, output_index, arguments: args });
      } else {
        const summary = item['summary'] as Obj[];
        emit('response.output_item.added', { output_index, item: { ...item, summary: [] } });
        summary.forEach((part, summary_index) => {
          const at = { item_id: itemId, output_index, summary_index };
          emit('response.reasoning_summary_part.added', { ...at, part: { type: 'summary_text', text: '' } });
          emit('response.reasoning_summary_text.delta', { ...at, delta: part['text'] });
          emit('response.reasoning_summary_text.done', { ...at, text: part['text'] });
          emit('response.reasoning_summary_part.done', { ...at, part });
        });
      }
      emit('response.output_item.done', { output_index, item });
    });
    emit('response.completed', { response: response('completed', output, usage) });
    return sse(events);
  },
};

/** Whether a Responses request sent `id` (a stored item) as an `item_reference`. */
export function referencesItem(body: Obj, id: string): boolean {
  return ((body['input'] ?? []) as Obj[]).some((i) => isObj(i) && i['type'] === 'item_reference' && i['id'] === id);
}
