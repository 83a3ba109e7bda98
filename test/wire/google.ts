// Google Gemini on the wire (`POST /v1beta/models/{model}:generateContent`, and
// `:streamGenerateContent?alt=sse`): JSON and SSE answers, usage with `cachedContentTokenCount` (part
// of `promptTokenCount`), thought signatures on the parts the model wrote, and the real rejections:
// "The input token count (N) exceeds the maximum number of tokens allowed (M).", the function
// call / response turn errors, and a thought signature that does not sign the part it is on.
import { json, sign, sse, type Dialect, type ReadRequest } from './fake-provider.ts';

type Obj = Record<string, unknown>;

function partsOf(content: unknown): Obj[] {
  const parts = (content as Obj | undefined)?.['parts'];
  return Array.isArray(parts) ? (parts as Obj[]) : [];
}
const textOf = (content: unknown): string =>
  partsOf(content)
    .map((p) => (typeof p['text'] === 'string' && p['thought'] !== true ? p['text'] : ''))
    .join('');

/** What a thought signature signs: the part's text, or its call's name and arguments. */
function signedPayload(part: Obj): string {
  const call = part['functionCall'] as Obj | undefined;
  return call
    ? `call:${String(call['name'])}:${JSON.stringify(call['args'] ?? {})}`
    : `text:${String(part['text'] ?? '')}`;
}

/** Gemini 3 replays a function call without its signature with this documented sentinel. */
const SKIP_SIGNATURE = 'skip_thought_signature_validator';

export const google: Dialect = {
  name: 'google',

  read(url, body): ReadRequest {
    const contents = (Array.isArray(body['contents']) ? body['contents'] : []) as Obj[];
    const problems: ReadRequest['problems'] = [];
    const invalid = (message: string) => problems.push({ rejection: 'pairing', status: 400, message });
    contents.forEach((c, i) => {
      const parts = partsOf(c);
      const calls = parts.filter((p) => p['functionCall'] !== undefined).length;
      const responses = parts.filter((p) => p['functionResponse'] !== undefined).length;
      if (responses > 0) {
        const previous = i > 0 ? partsOf(contents[i - 1]).filter((p) => p['functionCall'] !== undefined).length : 0;
        if (previous === 0)
          invalid('Please ensure that function response turn comes immediately after a function call turn.');
        else if (previous !== responses) {
          invalid(
            'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.',
          );
        }
      }
      // A function call turn answers the turn before it: a user turn or a function response turn
      // (both role user on the wire), never a model turn or nothing (google-gemini/gemini-cli#11814).
      if (calls > 0 && (i === 0 || contents[i - 1]?.['role'] !== 'user'))
        invalid(
          'Please ensure that function call turn comes immediately after a user turn or after a function response turn.',
        );
      if (calls > 0) {
        const next = contents[i + 1];
        if (next && partsOf(next).filter((p) => p['functionResponse'] !== undefined).length === 0) {
          invalid(
            'Please ensure that function call turn comes immediately after a user turn or after a function response turn.',
          );
        }
      }
      parts.forEach((p, j) => {
        const args = (p['functionCall'] as Obj | undefined)?.['args'];
        if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) {
          const path = `contents[${i}].parts[${j}].function_call.args`;
          invalid(
            `Invalid value at '${path}' (type.googleapis.com/google.protobuf.Struct), ${JSON.stringify(args).slice(0, 40)}`,
          );
        }
        const signature = p['thoughtSignature'];
        if (signature !== undefined && signature !== SKIP_SIGNATURE && signature !== sign(signedPayload(p))) {
          problems.push({ rejection: 'signature', status: 400, message: 'Corrupted thought signature.' });
        }
      });
    });
    const users = contents.filter((c) => c['role'] === 'user' && partsOf(c).some((p) => typeof p['text'] === 'string'));
    return {
      counted: { systemInstruction: body['systemInstruction'] ?? null, contents, tools: body['tools'] ?? [] },
      system: textOf(body['systemInstruction']),
      userTexts: users.map(textOf),
      references: [],
      problems,
      stream: url.includes(':streamGenerateContent'),
    };
  },

  error(problem) {
    return json(problem.status, {
      error: { code: problem.status, message: problem.message, status: 'INVALID_ARGUMENT' },
    });
  },

  contextLength(tokens, window) {
    return {
      status: 400,
      message: `The input token count (${tokens}) exceeds the maximum number of tokens allowed (${window}).`,
    };
  },

  answer(turn, usage, { stream, ids }) {
    // The model signs the first part it writes (Gemini 3 signs the first function call of a turn).
    const parts: Obj[] = [];
    if (turn.reasoning !== undefined) parts.push({ text: turn.reasoning, thought: true });
    if (turn.text !== undefined) parts.push({ text: turn.text });
    for (const c of turn.calls ?? []) parts.push({ functionCall: { name: c.name, args: c.args } });
    const signed = parts.findIndex((p) => p['thought'] !== true);
    if (signed >= 0) parts[signed] = { ...parts[signed], thoughtSignature: sign(signedPayload(parts[signed] as Obj)) };
    const usageMetadata = {
      promptTokenCount: usage.total,
      cachedContentTokenCount: usage.cached,
      candidatesTokenCount: usage.output,
      totalTokenCount: usage.total + usage.output,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: usage.total }],
    };
    const responseId = ids.next('resp-');
    const modelVersion = 'gemini-2.5-flash';
    const candidate = (p: Obj[], done: boolean) => ({
      content: { parts: p, role: 'model' },
      ...(done ? { finishReason: 'STOP' } : {}),
      index: 0,
    });
    if (!stream) return json(200, { candidates: [candidate(parts, true)], usageMetadata, modelVersion, responseId });
    // One chunk per part; the last carries the finish reason and the usage.
    const events = parts.map((p, i) => {
      const last = i === parts.length - 1;
      return {
        data: { candidates: [candidate([p], last)], ...(last ? { usageMetadata } : {}), modelVersion, responseId },
      };
    });
    return sse(events);
  },
};
