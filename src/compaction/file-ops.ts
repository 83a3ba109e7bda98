// Files read and modified, extracted from tool calls. A summary can drop a path the agent still
// needs; this list cannot, so it is carried across compactions and appended to every summary as a
// footer. Tools are recognized by name (case-insensitive, MCP-style prefixes ignored) and paths by
// well-known input keys, with two special shapes: editor tools whose `command` says whether they
// read or write, and patch tools whose paths live in the patch text.
import type { GuardMessage, ToolCallPart, ToolResultPart } from '../messages.ts';

export interface FileOpsConfig {
  /** Tools whose call puts a file's content into the context. */
  readTools: string[];
  /** Tools whose call creates, changes or deletes a file. */
  writeTools: string[];
  /** Input keys that hold a path (a string) or paths (an array of strings). */
  pathKeys: string[];
}

export interface FileOps {
  /**
   * Files read and not modified, the most recently touched last (at most
   * {@link FILE_OPS_MAX_PER_LIST}; memos stored before the bound hold them sorted, taken as that order).
   */
  read: string[];
  /** Files modified (whether or not also read), in the same order and bound. */
  modified: string[];
}

/**
 * Defaults covering common agent tool sets (Claude Code, the Anthropic text editor tool, OpenAI's
 * apply_patch, Gemini CLI, Cline, Cursor, OpenCode, generic MCP file servers). Search and listing
 * tools (grep, glob, ls) are deliberately absent: they name files without putting their content in
 * the context, so the agent has not "read" them.
 */
export const DEFAULT_FILE_OPS: FileOpsConfig = {
  readTools: [
    'read',
    'read_file',
    'readFile',
    'view',
    'view_file',
    'cat',
    'open_file',
    'read_many_files',
    'read_text_file',
    'NotebookRead',
  ],
  writeTools: [
    'write',
    'write_file',
    'writeFile',
    'write_to_file',
    'create_file',
    'edit',
    'edit_file',
    'editFile',
    'replace',
    'replace_in_file',
    'str_replace',
    'multi_edit',
    'MultiEdit',
    'NotebookEdit',
    'str_replace_editor',
    'str_replace_based_edit_tool',
    'apply_patch',
    'patch',
    'delete_file',
  ],
  pathKeys: [
    'path',
    'file_path',
    'filePath',
    'filename',
    'file',
    'target_file',
    'notebook_path',
    'absolute_path',
    'paths',
  ],
};

/**
 * Most paths kept per list, the most recently touched. The lists are carried across compactions,
 * in memory and in the store, and every compaction merges them: unbounded, they grew with every
 * file a session ever touched. 500 is ten times what the footer shows
 * ({@link DEFAULT_FOOTER_MAX_PER_LIST}), more distinct files than a long coding session touches,
 * and at most about 1 MB per session (1,024 characters a path, two lists), typically about 30 kB.
 * A path dropped from the list is not lost: the tool calls that named it were archived.
 */
export const FILE_OPS_MAX_PER_LIST = 500;

/** Anything longer, or spanning lines, is not a path but a value that happened to sit under `path`. */
const MAX_PATH_CHARS = 1024;

/** Editor-tool commands (Anthropic's text editor) that only look at a file. */
const READ_COMMANDS = new Set(['view']);

// Patch headers: OpenAI's apply_patch envelope (`*** Update File: path`, `*** Add File:`,
// `*** Delete File:`, `*** Move to:`) and unified/git diffs (`--- a/path`, `+++ b/path`). Plain
// `--- path` lines are not trusted: a removed line starting with "-- " (an SQL comment) looks the same.
const PATCH_PATH_RE = /^(?:\*\*\* (?:Update|Add|Delete) File: |\*\*\* Move to: |--- a\/|\+\+\+ b\/)(.+)$/gm;

function addPath(into: Set<string>, value: unknown): void {
  if (typeof value !== 'string') return;
  const path = value.trim();
  if (path.length === 0 || path.length > MAX_PATH_CHARS || /[\r\n]/.test(path)) return;
  into.add(path);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Paths under the configured keys of `input`, and of objects one level down: multi-file tools nest
 * them (`edits: [{ path }]`, OpenAI's `operation: { type: 'update_file', path }`).
 */
function pathsFromKeys(input: Record<string, unknown>, keys: Set<string>, into: Set<string>, depth = 0): void {
  for (const [key, value] of Object.entries(input)) {
    if (keys.has(key.toLowerCase())) {
      if (Array.isArray(value)) value.forEach((v) => addPath(into, v));
      else addPath(into, value);
    } else if (depth === 0) {
      const nested = Array.isArray(value) ? value : [value];
      for (const item of nested) if (isRecord(item)) pathsFromKeys(item, keys, into, 1);
    }
  }
}

/** Paths named by the headers of patch text (the input itself, or any of its string fields). */
function pathsFromPatch(input: unknown, into: Set<string>): void {
  const texts =
    typeof input === 'string'
      ? [input]
      : input && typeof input === 'object'
        ? Object.values(input).filter((v): v is string => typeof v === 'string')
        : [];
  for (const text of texts) {
    for (const match of text.matchAll(PATCH_PATH_RE)) {
      // Unified diffs may append a tab and a timestamp to the path.
      const path = (match[1] ?? '').split('\t')[0] ?? '';
      if (path.trim() !== '/dev/null') addPath(into, path);
    }
  }
}

/** `mcp__fs__read_file`, `functions.read_file`, `fs/read_file` also match `read_file`. */
function nameCandidates(toolName: string): string[] {
  const lower = toolName.toLowerCase();
  const last = lower.split(/__|[./:]/).pop() ?? lower;
  return last === lower ? [lower] : [lower, last];
}

function isFailed(part: ToolResultPart): boolean {
  const type = part.output?.type;
  return type === 'error-text' || type === 'error-json' || type === 'execution-denied';
}

function toolParts(messages: GuardMessage[]): { calls: ToolCallPart[]; failed: Set<string> } {
  const calls: ToolCallPart[] = [];
  const failed = new Set<string>();
  for (const message of messages) {
    if (!message || !Array.isArray(message.content)) continue;
    for (const part of message.content) {
      if (!part || typeof part !== 'object') continue;
      if (part.type === 'tool-call') calls.push(part as ToolCallPart);
      else if (part.type === 'tool-result' && isFailed(part as ToolResultPart))
        failed.add((part as ToolResultPart).toolCallId);
    }
  }
  return { calls, failed };
}

function byCodeUnit(a: string, b: string): number {
  // Not localeCompare: the footer must be byte-identical on every host, whatever its locale.
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Puts `path` last: the most recently touched. */
function touch(list: Set<string>, path: string): void {
  list.delete(path);
  list.add(path);
}

/** The `max` most recently touched paths of `list`, oldest first. */
function newest(list: Set<string>, max: number): string[] {
  const paths = [...list];
  return paths.length > max ? paths.slice(paths.length - max) : paths;
}

/**
 * Files read and modified by the tool calls in `messages`, merged with `previous` (carried from
 * earlier compactions), the most recently touched last and at most {@link FILE_OPS_MAX_PER_LIST}
 * per list. A call whose result is an error or a denial changed nothing and read nothing, so it is
 * skipped; a call without a result yet is counted. A file both read and modified is listed only
 * under `modified` (reading it again moves it there to last).
 */
export function extractFileOps(
  messages: GuardMessage[],
  config: FileOpsConfig = DEFAULT_FILE_OPS,
  previous?: FileOps,
): FileOps {
  const readTools = new Set(config.readTools.map((t) => t.toLowerCase()));
  const writeTools = new Set(config.writeTools.map((t) => t.toLowerCase()));
  const pathKeys = new Set(config.pathKeys.map((k) => k.toLowerCase()));
  const read = new Set<string>(previous?.read ?? []);
  const modified = new Set<string>(previous?.modified ?? []);

  const { calls, failed } = toolParts(messages);
  for (const call of calls) {
    if (typeof call.toolName !== 'string' || failed.has(call.toolCallId)) continue;
    const names = nameCandidates(call.toolName);
    const isWrite = names.some((n) => writeTools.has(n));
    const isRead = !isWrite && names.some((n) => readTools.has(n));
    if (!isWrite && !isRead) continue;

    const input = call.input;
    const fields = isRecord(input) ? input : undefined;
    const paths = new Set<string>();
    if (fields) pathsFromKeys(fields, pathKeys, paths);
    // Patch text is read only when no path key named the file: a `write_file` whose content is a
    // diff writes one file, not the files the diff mentions.
    if (isWrite && paths.size === 0) pathsFromPatch(input, paths);
    if (paths.size === 0 && isRead && typeof input === 'string') addPath(paths, input);

    const command = typeof fields?.command === 'string' ? fields.command.toLowerCase() : undefined;
    const writes = isWrite && !(command !== undefined && READ_COMMANDS.has(command));
    for (const p of paths) touch(writes || modified.has(p) ? modified : read, p);
  }

  for (const p of modified) read.delete(p);
  return { read: newest(read, FILE_OPS_MAX_PER_LIST), modified: newest(modified, FILE_OPS_MAX_PER_LIST) };
}

/** Most paths listed per line of the footer by default. */
export const DEFAULT_FOOTER_MAX_PER_LIST = 50;

const FOOTER_OPEN = '<files>';
const FOOTER_CLOSE = '</files>';

function listLine(label: string, paths: string[], max: number): string {
  // Sorted here, not in the lists: they keep the order in which paths were touched (which to drop).
  const shown = [...paths].sort(byCodeUnit).slice(0, max);
  const more = paths.length - shown.length;
  return `${label}: ${shown.join(', ')}${more > 0 ? `${shown.length > 0 ? ' ' : ''}(+${more} more)` : ''}`;
}

/**
 * The footer appended to summaries: `<files>\nread: a.ts, b.ts\nmodified: c.ts\n</files>`, with each
 * list clipped to `maxPerList` paths plus "(+N more)"; the empty string when there are no files.
 */
export function renderFileOpsFooter(ops: FileOps, maxPerList: number = DEFAULT_FOOTER_MAX_PER_LIST): string {
  const max = Number.isFinite(maxPerList) ? Math.max(0, Math.floor(maxPerList)) : Number.MAX_SAFE_INTEGER;
  const lines: string[] = [];
  if (ops.read.length > 0) lines.push(listLine('read', ops.read, max));
  if (ops.modified.length > 0) lines.push(listLine('modified', ops.modified, max));
  return lines.length > 0 ? [FOOTER_OPEN, ...lines, FOOTER_CLOSE].join('\n') : '';
}

/**
 * A summary without its trailing file-ops footer: what to hand the summarizer as the previous
 * summary, since the footer is rebuilt from the carried file lists rather than rewritten by a model.
 */
export function stripFileOpsFooter(summary: string): string {
  const end = summary.trimEnd();
  if (!end.endsWith(FOOTER_CLOSE)) return summary;
  const start = end.lastIndexOf(`${FOOTER_OPEN}\n`);
  return start < 0 ? summary : end.slice(0, start).trimEnd();
}

/**
 * The file lists of a footer written by {@link renderFileOpsFooter}, or undefined when the summary
 * has none: a host that keeps the compacted history itself hands the guard its summary back, and
 * the lists must carry on from it. Lists clipped with "(+N more)" come back without the clipped
 * paths.
 */
export function parseFileOpsFooter(summary: string): FileOps | undefined {
  const end = summary.trimEnd();
  if (!end.endsWith(FOOTER_CLOSE)) return undefined;
  const start = end.lastIndexOf(`${FOOTER_OPEN}\n`);
  if (start < 0) return undefined;
  const ops: FileOps = { read: [], modified: [] };
  for (const line of end.slice(start + FOOTER_OPEN.length + 1, end.length - FOOTER_CLOSE.length).split('\n')) {
    const match = /^(read|modified): (.*)$/.exec(line.trim());
    if (!match) continue;
    const list = (match[2] ?? '').replace(/\s*\(\+\d+ more\)$/, '');
    const paths = list.split(', ').filter((p) => p.length > 0);
    ops[match[1] as 'read' | 'modified'] = paths;
  }
  return ops;
}
