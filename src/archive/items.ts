// What a compaction took out of the prompt, as archive items. The compaction's memo says what it
// does to the host's history; comparing the prompt before and after it tells which host messages
// left the prompt (summarized) and which were shrunk (a tool output replaced or truncated, a message
// clipped, media named instead). Each is archived from the host's original, never from an earlier
// edit of it, so what the archive holds is what the host wrote.
import { quotedId } from '../compaction/quoted-id.ts';
import type { CompactionMemo, View } from '../compaction/memo.ts';
import { PLACEHOLDER } from '../compaction/tool-edits.ts';
import { MAX_LABEL_CHARS, oneLine, safeJson, toolOutputText, userContentText } from '../compaction/text.ts';
import type { GuardMessage, ToolResultPart } from '../messages.ts';
import type { ArchivedItem, ReplacedMessage, ReplacementKind } from './types.ts';

/** A host message (or one of its tool results) that left the prompt or was shrunk in it. */
export interface Replacement {
  position: number;
  kind: ReplacementKind;
  /** Only this tool result was edited (a prune); undefined: the whole message. */
  toolCallId?: string;
}

/** What the compaction from `before` (rendered with `oldMemo`) to `after` (with `newMemo`) replaced. */
export function replacementsOf(
  before: View,
  after: View,
  oldMemo: CompactionMemo,
  newMemo: CompactionMemo,
  hashOf: (index: number) => number,
): Replacement[] {
  const present = new Set<number>();
  for (const o of after.origin) if (o >= 0) present.add(o);
  const out: Replacement[] = [];
  const seen = new Set<number>();
  for (const o of before.origin) {
    if (o < 0 || seen.has(o)) continue;
    seen.add(o);
    if (!present.has(o)) out.push({ position: o, kind: 'summarized' });
  }
  for (const [key, edit] of Object.entries(newMemo.tools)) {
    if (oldMemo.tools[key] === edit) continue;
    const colon = key.indexOf(':');
    const position = Number(key.slice(0, colon));
    if (!present.has(position)) continue;
    out.push({ position, kind: edit === PLACEHOLDER ? 'placeholder' : 'truncated', toolCallId: key.slice(colon + 1) });
  }
  const newClips = Object.keys(newMemo.clips).filter((k) => oldMemo.clips[k] !== newMemo.clips[k]);
  const clipped = new Set<number>();
  if (newClips.length > 0) {
    const wanted = new Set(newClips);
    for (const o of present) if (wanted.has(String(hashOf(o)))) clipped.add(o);
  }
  const request = newMemo.requestClip;
  if (request && present.has(request.index) && oldMemo.requestClip?.chars !== request.chars) clipped.add(request.index);
  for (const position of clipped) out.push({ position, kind: 'clipped' });
  const media = new Set<number>();
  for (const key of Object.keys(newMemo.media ?? {})) {
    if (oldMemo.media?.[key]) continue;
    const position = Number(key.slice(0, key.indexOf(':')));
    if (present.has(position) && !clipped.has(position)) media.add(position);
  }
  for (const position of media) out.push({ position, kind: 'media' });
  return out.sort((a, b) => a.position - b.position);
}

/** The receipt's view of the replacements (one entry per tool result of a summarized tool message). */
export function replacedMessages(
  input: readonly GuardMessage[],
  replacements: readonly Replacement[],
): ReplacedMessage[] {
  return replacements.flatMap(({ position, kind, toolCallId }) => {
    const m = input[position];
    if (!m || m.role === 'system') return [];
    if (toolCallId !== undefined) return [{ position, role: m.role, toolCallId, replaced: kind }];
    const results = m.role === 'tool' && Array.isArray(m.content) ? toolResults(m) : [];
    if (results.length > 0)
      return results.map((r) => ({ position, role: m.role, toolCallId: String(r.toolCallId), replaced: kind }));
    return [{ position, role: m.role, replaced: kind }];
  });
}

/** Archive items for the replacements, read from the host's originals; text goes through `redact`. */
export function archiveItems(
  input: readonly GuardMessage[],
  replacements: readonly Replacement[],
  label: string,
  redact: (text: string) => string,
  edits: Readonly<Record<string, number>> = {},
): ArchivedItem[] {
  const items: ArchivedItem[] = [];
  // The origin is keyed on the text before redaction: what the host's copy of the message renders to.
  const add = (item: Omit<ArchivedItem, 'label' | 'id'> & { id?: string }) =>
    items.push({
      ...item,
      id: item.id ?? `${label}#${items.length + 1}`,
      label,
      text: redact(item.text),
      origin: originKey(item.text),
    });
  for (const { position, kind, toolCallId } of replacements) {
    const m = input[position];
    if (!m || m.role === 'system') continue;
    if (m.role === 'tool' || (toolCallId !== undefined && m.role === 'assistant')) {
      for (const part of toolResults(m)) {
        if (toolCallId !== undefined && part.toolCallId !== toolCallId) continue;
        const kept = keptChars(kind, toolCallId, position, edits);
        const item = toolResultItem(part, position, kind);
        // The head the prompt keeps is half of what the truncation kept, after the item's first line.
        const cutAt = kept !== undefined ? item.text.indexOf('\n') + 1 + Math.ceil(kept / 2) : undefined;
        add({ ...item, ...(cutAt !== undefined ? { cutAt } : {}) });
      }
      if (m.role === 'tool' || toolCallId !== undefined) continue;
    }
    add({ role: m.role, text: messageText(m), position, replaced: kind });
  }
  return items;
}

/**
 * A 64-bit key of an original's rendering (FNV-1a under two seeds): recall's `conversation` check
 * compares it with the keys of the asking conversation's messages. Not a secret and not a proof
 * against someone who already holds the text: whoever holds the text may have it back.
 */
export function originKey(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x01000193) >>> 0;
  }
  return `${a.toString(16).padStart(8, '0')}${b.toString(16).padStart(8, '0')}`;
}

/**
 * The origin keys of every item a conversation's messages could have been archived as: each user
 * or assistant message, each tool result (linear in the conversation's text).
 */
export function originKeysOf(conversation: readonly GuardMessage[]): Set<string> {
  const keys = new Set<string>();
  if (!Array.isArray(conversation)) return keys;
  conversation.forEach((m, position) => {
    if (!m || typeof m !== 'object' || m.role === 'system') return;
    try {
      for (const part of toolResults(m)) keys.add(originKey(toolResultItem(part, position, 'placeholder').text));
      if (m.role === 'user' || m.role === 'assistant') keys.add(originKey(messageText(m)));
    } catch {
      // A message that cannot be rendered matches nothing.
    }
  });
  return keys;
}

/** The characters a truncation kept, for a truncated tool output. */
function keptChars(
  kind: ReplacementKind,
  toolCallId: string | undefined,
  position: number,
  edits: Readonly<Record<string, number>>,
): number | undefined {
  if (kind !== 'truncated' || toolCallId === undefined) return undefined;
  const kept = edits[`${position}:${toolCallId}`];
  return kept !== undefined && kept >= 0 ? kept : undefined;
}

function toolResultItem(part: ToolResultPart, position: number, replaced: ReplacementKind) {
  const { text, isError } = toolOutputText(part.output);
  const toolCallId = String(part.toolCallId);
  const toolName = oneLine(part.toolName, MAX_LABEL_CHARS);
  return {
    // The id the placeholder quotes (a long id is quoted short); the whole id stays in toolCallId.
    id: quotedId(toolCallId),
    role: 'tool' as const,
    text: `${toolName} ${isError ? 'failed' : 'returned'}:\n${text}`,
    toolCallId,
    toolName,
    position,
    replaced,
  };
}

function toolResults(m: GuardMessage): ToolResultPart[] {
  if (!Array.isArray(m.content)) return [];
  return (m.content as Array<{ type?: unknown }>).filter((p): p is ToolResultPart => p?.type === 'tool-result');
}

/** A user or assistant message as text: tool calls as `name(input)`, media as labels. */
export function messageText(m: GuardMessage): string {
  if (m.role === 'user') return userContentText(m.content);
  if (typeof m.content === 'string') return m.content;
  if (!Array.isArray(m.content)) return safeJson(m.content);
  return (m.content as unknown as Array<Record<string, unknown>>)
    .map((part) => {
      if (part?.type === 'text') return String(part.text ?? '');
      if (part?.type === 'reasoning') return `(reasoning) ${String(part.text ?? '')}`;
      if (part?.type === 'tool-call')
        return `→ ${oneLine(part.toolName, MAX_LABEL_CHARS)}(${safeJson(part.input)}) [${oneLine(part.toolCallId, MAX_LABEL_CHARS)}]`;
      if (part?.type === 'tool-result') return toolOutputText((part as unknown as ToolResultPart).output).text;
      return userContentText([part as never]);
    })
    .filter((t) => t.length > 0)
    .join('\n');
}
