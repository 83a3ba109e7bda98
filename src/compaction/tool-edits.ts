// Tool outputs are usually the bulk of an agent's context and the cheapest thing to give up: the
// tool can be run again. Two edits, both deterministic functions of the original result so that a
// stateless host replaying its history gets byte-identical messages on every call: truncation
// (head and tail kept, a marker saying how much was cut) and a placeholder that says what was
// removed. Edits are remembered by tool call id (see memo.ts), never recomputed from positions.
import { quotedId } from './quoted-id.ts';
import type { GuardMessage, ToolResultOutput, ToolResultPart } from '../messages.ts';
import { clipMiddle, formatCount, oneLine, toolOutputText } from './text.ts';

/** A tool edit: {@link PLACEHOLDER}, or the number of characters a truncated output keeps. */
export type ToolEdit = number;
export const PLACEHOLDER: ToolEdit = -1;

/** Whether an output is media-free text: media cannot be truncated, only replaced. */
function textOnly(output: ToolResultOutput): boolean {
  return output.type !== 'content' || output.value.every((item) => item.type === 'text');
}

/** How the model gets an archived output back: the recall tool, by the tool-call id. */
function recallHint(part: ToolResultPart): string {
  return `recall id ${JSON.stringify(quotedId(String(part.toolCallId)))}`;
}

/**
 * The output a placeholder stands for: what was removed, and how to get it back (recall it from
 * the archive when `recall`, else run the tool again).
 */
export function placeholderOutput(part: ToolResultPart, recall = false): ToolResultOutput {
  const { text, isError } = toolOutputText(part.output);
  const back = recall
    ? `Archived: ${recallHint(part)}, or call the tool again.`
    : 'Call the tool again if you need it.';
  return {
    type: 'text',
    value: `[Output of tool ${oneLine(part.toolName, 100)} removed to save context (${formatCount(text.length)} characters${isError ? ', an error' : ''}). ${back}]`,
  };
}

/** The output truncated to about `maxChars` characters, head and tail kept (and how to recall the rest). */
export function truncatedOutput(part: ToolResultPart, maxChars: number, recall = false): ToolResultOutput {
  if (!textOnly(part.output)) return placeholderOutput(part, recall);
  const { text, isError } = toolOutputText(part.output);
  // The marker in the middle says what was cut and, when it is archived, how to read it whole.
  const value = clipMiddle(text, maxChars, recall ? `archived whole: ${recallHint(part)}` : undefined);
  return { type: isError ? 'error-text' : 'text', value };
}

/** Characters of an output's text (what truncation works on). */
export function outputChars(part: ToolResultPart): number {
  return toolOutputText(part.output).text.length;
}

function editedPart(part: ToolResultPart, edit: ToolEdit, recall: boolean): ToolResultPart {
  const output = edit === PLACEHOLDER ? placeholderOutput(part, recall) : truncatedOutput(part, edit, recall);
  return { ...part, output };
}

/**
 * Where a tool edit applies: the host's message index and the tool call id. Ids alone are not
 * unique (some models and hosts reuse `call_0` for every call), and an edit meant for an old result
 * must never reach the newest one.
 */
export function toolEditKey(hostIndex: number, toolCallId: string): string {
  return `${hostIndex}:${toolCallId}`;
}

/** The message with each tool result edited per `editOf(part)`; the same object when none applies. */
function editToolResults(
  message: GuardMessage,
  editOf: (part: ToolResultPart) => ToolEdit | undefined,
  recall = false,
): GuardMessage {
  if (message.role !== 'tool' && message.role !== 'assistant') return message;
  const content = message.content;
  if (!Array.isArray(content)) return message;
  let changed = false;
  const next = content.map((part) => {
    if (part?.type !== 'tool-result') return part;
    const edit = editOf(part);
    if (edit === undefined) return part;
    changed = true;
    return editedPart(part, edit, recall);
  });
  return changed ? ({ ...message, content: next } as GuardMessage) : message;
}

/** The message with its tool results edited per `edits`, keyed by tool call id (one message's own edits). */
export function applyToolEdits(message: GuardMessage, edits: Readonly<Record<string, ToolEdit>>): GuardMessage {
  return editToolResults(message, (part) =>
    Object.hasOwn(edits, part.toolCallId) ? edits[part.toolCallId] : undefined,
  );
}

/** The host's message `hostIndex` with its tool results edited per a memo's edits (see {@link toolEditKey}). */
export function applyToolEditsAt(
  message: GuardMessage,
  edits: Readonly<Record<string, ToolEdit>>,
  hostIndex: number,
  recall = false,
): GuardMessage {
  return editToolResults(
    message,
    (part) => {
      const key = toolEditKey(hostIndex, part.toolCallId);
      return Object.hasOwn(edits, key) ? edits[key] : undefined;
    },
    recall,
  );
}

/** Every tool result of a message, with its index in the content. */
export function toolResultsOf(message: GuardMessage): ToolResultPart[] {
  if ((message.role !== 'tool' && message.role !== 'assistant') || !Array.isArray(message.content)) return [];
  return (message.content as Array<{ type?: unknown }>).filter((p): p is ToolResultPart => p?.type === 'tool-result');
}

/** Whether a tool is on the never-prune list (case-insensitive). */
export function isProtectedTool(toolName: string, neverPrune: readonly string[]): boolean {
  const name = String(toolName).toLowerCase();
  return neverPrune.some((n) => n.toLowerCase() === name);
}
