// Reads a transcript file in any supported format: detects the format (or takes the one forced),
// parses it, and reports what could not be read. See types.ts for the common shape.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseClaudeCode } from './claude-code.ts';
import { parseCodex } from './codex.ts';
import { messageListFormat, parseMessageList } from './messages.ts';
import { parseJson, parseMiniSweAgent, TranscriptError } from './mini-swe-agent.ts';
import { isObject, type Transcript, type TranscriptFormat } from './types.ts';

export { parseClaudeCode } from './claude-code.ts';
export { parseCodex } from './codex.ts';
export { parseMessageList } from './messages.ts';
export { parseMiniSweAgent, TranscriptError } from './mini-swe-agent.ts';
export * from './types.ts';

const CODEX_TYPES = new Set(['session_meta', 'response_item', 'event_msg', 'turn_context', 'compacted']);
const CLAUDE_TYPES = new Set([
  'user',
  'assistant',
  'system',
  'summary',
  'progress',
  'file-history-snapshot',
  'queue-operation',
]);

/** The format of a transcript's text: by its structure, the file name only breaking ties. */
export function detectFormat(text: string, file = ''): TranscriptFormat {
  return detect(text, file).format;
}

/**
 * The format of a transcript's text, and the whole text parsed when it is one JSON document (a
 * message list is then not parsed a second time: a 100,000-call file is 90 MB of JSON).
 */
function detect(text: string, file: string): { format: TranscriptFormat; data?: unknown } {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('[')) {
    const data = parseJson(text);
    return { format: Array.isArray(data) ? messageListFormat(data) : 'openai', data };
  }
  let whole: unknown;
  let wholeError: unknown;
  try {
    whole = JSON.parse(text);
  } catch (error) {
    wholeError = error;
  }
  if (isObject(whole) && Array.isArray(whole.messages)) {
    if ('trajectory_format' in whole || isObject(whole.info) || file.endsWith('.traj.json'))
      return { format: 'mini-swe-agent' };
    return { format: messageListFormat(whole.messages), data: whole };
  }
  // JSON Lines: look at the first lines that parse
  let seen = 0;
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    let line: unknown;
    try {
      line = JSON.parse(raw);
    } catch {
      continue;
    }
    if (!isObject(line)) continue;
    if (CODEX_TYPES.has(String(line.type)) && isObject(line.payload)) return { format: 'codex' };
    if (CLAUDE_TYPES.has(String(line.type)) && (isObject(line.message) || 'uuid' in line || 'sessionId' in line)) {
      return { format: 'claude-code' };
    }
    if (++seen >= 50) break;
  }
  if (file.endsWith('.traj.json')) return { format: 'mini-swe-agent' };
  // a JSON document that does not parse: say where
  if (wholeError !== undefined && trimmed.startsWith('{') && !file.endsWith('.jsonl')) parseJson(text);
  throw new TranscriptError(
    'unknown transcript format: expected a Claude Code or Codex CLI JSONL session, a mini-swe-agent .traj.json, ' +
      'or a JSON array of OpenAI-style or AI SDK messages (use --format to force one)',
  );
}

/** Parses a transcript's text in the given format (detected when omitted). */
export function parseTranscript(text: string, file: string, format?: TranscriptFormat): Transcript {
  const name = basename(file);
  const detected = format === undefined ? detect(text, name) : undefined;
  const chosen = format ?? (detected as { format: TranscriptFormat }).format;
  switch (chosen) {
    case 'claude-code':
      return parseClaudeCode(name, text);
    case 'codex':
      return parseCodex(name, text);
    case 'mini-swe-agent':
      return parseMiniSweAgent(name, text);
    case 'openai':
    case 'ai-sdk':
      return parseMessageList(name, detected?.data ?? parseJson(text), chosen);
  }
}

/** Reads and parses a transcript file. Throws a {@link TranscriptError} when it cannot be replayed at all. */
export function readTranscript(path: string, format?: TranscriptFormat): Transcript {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new TranscriptError(`cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return parseTranscript(text, path, format);
}
