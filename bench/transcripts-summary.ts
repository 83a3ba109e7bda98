// Prints what bench/transcripts.ts makes of the transcripts, to sanity-check the loader:
//   node bench/transcripts-summary.ts [dir]
// Per file: format, model, calls, skipped calls, min/max reported prompt tokens, the characters of
// the last call's messages, and characters per reported token. Characters are counted two ways:
// "json" = JSON.stringify(message.content).length summed over the messages (escapes and part
// framing included), "text" = the raw texts, tool inputs as JSON, tool outputs as text. The ratios:
// "growth" over consecutive scored calls (the hidden system prompt and tool schemas cancel out;
// compare with the README's notes), "last" for the whole last call (hidden offset included, so
// lower; meaningless for the acompact files, whose file holds only the tail of the input).

import type { GuardMessage } from '../src/messages.ts';
import { loadTranscripts } from './transcripts.ts';

/** Characters of a message's content as JSON (roughly what the request carries). */
function jsonChars(message: GuardMessage): number {
  return JSON.stringify(message.content).length;
}

/** Rough visible characters of a message: texts as they are, other values as JSON. */
function textChars(message: GuardMessage): number {
  if (typeof message.content === 'string') return message.content.length;
  let chars = 0;
  for (const part of message.content as unknown[]) {
    const p = part as Record<string, unknown>;
    switch (p.type) {
      case 'text':
      case 'reasoning':
        chars += String(p.text ?? '').length;
        break;
      case 'tool-call':
        chars +=
          String(p.toolName ?? '').length +
          (typeof p.input === 'string' ? p.input.length : JSON.stringify(p.input ?? {}).length);
        break;
      case 'tool-result': {
        const output = p.output as { type: string; value?: unknown } | undefined;
        const value = output?.value;
        if (typeof value === 'string') chars += value.length;
        else if (Array.isArray(value)) {
          for (const item of value as Array<Record<string, unknown>>) {
            chars += item.type === 'text' ? String(item.text ?? '').length : 0;
          }
        } else if (value !== undefined) chars += JSON.stringify(value).length;
        break;
      }
      case 'image':
      case 'file':
        break; // media: not characters
      default:
        chars += JSON.stringify(p).length;
    }
  }
  return chars;
}

function callChars(
  messages: GuardMessage[],
  cache: Map<GuardMessage, number>,
  count: (message: GuardMessage) => number,
): number {
  let total = 0;
  for (const message of messages) {
    let chars = cache.get(message);
    if (chars === undefined) {
      chars = count(message);
      cache.set(message, chars);
    }
    total += chars;
  }
  return total;
}

const dir = process.argv[2];
const transcripts = loadTranscripts(dir);
if (!transcripts) {
  console.log(`no transcript folder at ${dir ?? '../shared/transcripts'}`);
  process.exit(0);
}

/** Growth ratio (characters per token over consecutive scored calls) and whole-last-call ratio. */
function ratios(inputs: number[], skips: boolean[], chars: number[]): [string, string] {
  let dChars = 0;
  let dTokens = 0;
  for (let k = 1; k < inputs.length; k++) {
    if (skips[k]) continue;
    dChars += chars[k]! - chars[k - 1]!;
    dTokens += inputs[k]! - inputs[k - 1]!;
  }
  const growth = dTokens > 0 ? (dChars / dTokens).toFixed(2) : '-';
  const last = (chars[chars.length - 1]! / inputs[inputs.length - 1]!).toFixed(2);
  return [growth, last];
}

function shortName(file: string): string {
  return file
    .replace(/^claude-code__|^msa__/, '')
    .replace(/\.traj\.json$|\.jsonl$/, '')
    .replace(/^([0-9a-f]{8})-[0-9a-f-]{27}/, '$1')
    .replace('_subagents_agent-', '/');
}

const rows: string[][] = [
  [
    'file',
    'format',
    'model',
    'calls',
    'skip',
    'min in',
    'max in',
    'last chars',
    'growth json c/t',
    'growth text c/t',
    'last json c/t',
  ],
];
for (const t of transcripts) {
  const inputs = t.calls.map((call) => call.inputTokens);
  const skips = t.calls.map((call) => call.skip !== undefined);
  const jsonCache = new Map<GuardMessage, number>();
  const textCache = new Map<GuardMessage, number>();
  const json = t.calls.map((call) => callChars(call.messages, jsonCache, jsonChars));
  const text = t.calls.map((call) => callChars(call.messages, textCache, textChars));
  const [jsonGrowth, jsonLast] = ratios(inputs, skips, json);
  const [textGrowth] = ratios(inputs, skips, text);
  rows.push([
    shortName(t.file),
    t.format,
    t.modelId,
    String(t.calls.length),
    String(skips.filter(Boolean).length),
    String(Math.min(...inputs)),
    String(Math.max(...inputs)),
    String(json[json.length - 1]),
    jsonGrowth,
    textGrowth,
    jsonLast,
  ]);
}
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
for (const row of rows) {
  console.log(row.map((cell, i) => (i >= 3 ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join('  '));
}
