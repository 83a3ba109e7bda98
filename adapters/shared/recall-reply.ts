// What both adapters' recall tools do once they know the session: look the archive up (by id, by
// query) and answer in text the model reads as a tool result. Every answer, empty ones included,
// says what to do next: a model that gets "[]" back tends to call the tool again with the same input.
import { z } from 'zod';
import { formatCount, oneLine, type ContextGuard, type GuardMessage, type RecalledItem } from '../../src/index.ts';

/** The recall tool's description, shared by the adapters. */
export const RECALL_TOOL_DESCRIPTION =
  'Find again what compaction took out of this conversation: tool outputs replaced by a placeholder or truncated, ' +
  'and the messages a summary replaced. They are archived whole. Look an item up by `id` (the id a placeholder or ' +
  'a truncation marker names, or an archive batch label a summary names), or search with `query`. The text is as ' +
  "it was then: call the tool again instead when you need a file's or a command's current state.";

/** The description of the tool's `query` input. */
const RECALL_QUERY_DESCRIPTION =
  'Words from what you need, as they would appear in it: a file path, an error message, an identifier. ' +
  'Results are ranked by relevance.';

/** The description of the tool's `id` input. */
const RECALL_ID_DESCRIPTION =
  'The tool-call id a placeholder names (`recall id "call_1"`), or an archive batch label a summary names ' +
  '(`compaction-batch-…`): returns exactly those items.';

/** The description of the tool's `limit` input. */
const RECALL_LIMIT_DESCRIPTION = 'Most items to return, 1 to 20. Default 5.';

/** The description of the tool's `offset` input. */
const RECALL_OFFSET_DESCRIPTION =
  'Read on from this character of each item (a long output comes back in parts; its text says which offset reads on).';

/** The most items one tool call may ask for (the schema's bound; the guard's own is 50). */
const MAX_RECALL_TOOL_LIMIT = 20;

/** The recall tool's input, the same zod schema for both adapters' tools. */
export const recallInputSchema = z.object({
  query: z.string().optional().describe(RECALL_QUERY_DESCRIPTION),
  id: z.string().optional().describe(RECALL_ID_DESCRIPTION),
  limit: z.number().int().min(1).max(MAX_RECALL_TOOL_LIMIT).optional().describe(RECALL_LIMIT_DESCRIPTION),
  offset: z.number().int().min(0).optional().describe(RECALL_OFFSET_DESCRIPTION),
});

export interface RecallInput {
  query?: string | undefined;
  id?: string | undefined;
  limit?: number | undefined;
  offset?: number | undefined;
}

/** An input the model wrote, shown back to it on one short line. */
const quoted = (text: string): string => JSON.stringify(oneLine(text, 200));

/**
 * Looks the session's archive up and returns the tool's answer. `conversation`: the asking
 * conversation's messages, for a session that conversations may share (a derived id): only items
 * archived from them are returned.
 */
export async function recallReply(
  guard: ContextGuard,
  sessionId: string,
  input: RecallInput,
  maxChars: number | undefined,
  conversation?: readonly GuardMessage[],
): Promise<string> {
  const query = input.query?.trim() ?? '';
  const id = input.id?.trim() ?? '';
  if (!query && !id) {
    return (
      'Nothing was looked up: give a `query` (words from what you need: a file path, an error, an identifier) ' +
      'or an `id` (the tool-call id a placeholder names, or an archive batch label a summary names).'
    );
  }
  if (!guard.options.archive.enabled) {
    return (
      'Nothing can be recalled: the archive is turned off, so what compaction removed was not kept. ' +
      'Call the tool again if you need its output.'
    );
  }
  const items = await guard.recall(sessionId, {
    ...(query ? { query } : {}),
    ...(id ? { id } : {}),
    ...(input.limit !== undefined ? { limit: input.limit } : {}),
    ...(input.offset !== undefined ? { offset: input.offset } : {}),
    ...(maxChars !== undefined ? { maxChars } : {}),
    ...(conversation !== undefined ? { conversation } : {}),
  });
  const what = [id ? `id ${quoted(id)}` : '', query ? `query ${quoted(query)}` : ''].filter(Boolean).join(' and ');
  if (items.length === 0) {
    return (
      `Nothing in the archive matches ${what}; the archive holds what compaction removed from this conversation ` +
      '(tool outputs and the messages a summary replaced). ' +
      (id
        ? 'Check the id against the placeholder (the oldest batches are dropped when the archive is full), ' +
          'or search with a query.'
        : 'Try other words, or the id a placeholder names.')
    );
  }
  const count = `${items.length} archived item${items.length === 1 ? '' : 's'}`;
  return [`${count} for ${what}, as they were when compaction removed them:`, ...items.map(renderItem)].join('\n\n');
}

/** One item: a header line the model can cite (who, id, batch, size, whether cut), then its text. */
export function renderItem(item: RecalledItem): string {
  const who = item.role === 'tool' ? `tool ${item.toolName ?? 'result'}` : item.role;
  const size = `${formatCount(item.chars)} chars${cutNote(item)}`;
  return `--- [${who} · id ${item.id} · ${item.label} · ${size}]\n${item.text}`;
}

/**
 * How a long item was cut to fit. Read from an offset (asked for, or where the prompt's copy of a
 * truncated output is cut: the part the model lacks), around a query's match (the text then opens
 * with its `[... N characters before ...]` marker), or head and tail, with how to reach the middle.
 */
function cutNote(item: RecalledItem): string {
  if (!item.truncated) return '';
  if (item.offset > 0) return `, from character ${formatCount(item.offset)}`;
  if (item.text.startsWith('[... ')) return ', cut around the match';
  return ', head and tail shown: add a `query` with words of the part you need to read around it';
}
