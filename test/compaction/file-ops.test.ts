import { describe, it, expect } from 'vitest';
import type { GuardMessage, ToolResultOutput } from '../../src/messages.ts';
import {
  DEFAULT_FILE_OPS,
  FILE_OPS_MAX_PER_LIST,
  extractFileOps,
  renderFileOpsFooter,
  stripFileOpsFooter,
} from '../../src/compaction/file-ops.ts';

let n = 0;
/** One tool call and its (successful unless told) result. */
function step(
  toolName: string,
  input: unknown,
  output: ToolResultOutput = { type: 'text', value: 'ok' },
): GuardMessage[] {
  const toolCallId = `call_${++n}`;
  return [
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId, toolName, input }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName, output }] },
  ];
}

/** The lists sorted: the recognition tests are about which paths, the order is tested on its own. */
function ops(...steps: GuardMessage[][]) {
  const { read, modified } = extractFileOps(steps.flat());
  return { read: read.sort(), modified: modified.sort() };
}

describe('extractFileOps', () => {
  it('recognizes read tools and their path keys', () => {
    expect(
      ops(
        step('read', { path: 'a.ts' }),
        step('read_file', { file_path: 'b.ts' }),
        step('readFile', { filePath: 'c.ts' }),
        step('Read', { file_path: '/abs/d.ts' }),
        step('view', { path: 'e.ts' }),
        step('cat', { file: 'f.ts' }),
        step('open_file', { target_file: 'g.ts' }),
        step('read_many_files', { paths: ['h.ts', 'i.ts'] }),
        step('read_file', { absolute_path: '/abs/j.ts' }),
        step('NotebookRead', { notebook_path: 'k.ipynb' }),
      ),
    ).toEqual({
      read: ['/abs/d.ts', '/abs/j.ts', 'a.ts', 'b.ts', 'c.ts', 'e.ts', 'f.ts', 'g.ts', 'h.ts', 'i.ts', 'k.ipynb'],
      modified: [],
    });
  });

  it('recognizes write and edit tools', () => {
    expect(
      ops(
        step('write', { path: 'a.ts', content: '' }),
        step('write_file', { file_path: 'b.ts', content: '' }),
        step('writeFile', { filePath: 'c.ts', content: '' }),
        step('Write', { file_path: 'd.ts', content: '' }),
        step('edit', { path: 'e.ts', old_string: 'a', new_string: 'b' }),
        step('Edit', { file_path: 'f.ts', old_string: 'a', new_string: 'b' }),
        step('edit_file', { target_file: 'g.ts' }),
        step('MultiEdit', { file_path: 'h.ts', edits: [{ old_string: 'a', new_string: 'b' }] }),
        step('NotebookEdit', { notebook_path: 'i.ipynb', new_source: '' }),
        step('write_to_file', { path: 'j.ts', content: '' }),
        step('multi_file_edit', { files: [{ path: 'nope.ts' }] }), // not a known tool
      ),
    ).toEqual({
      read: [],
      modified: ['a.ts', 'b.ts', 'c.ts', 'd.ts', 'e.ts', 'f.ts', 'g.ts', 'h.ts', 'i.ipynb', 'j.ts'],
    });
  });

  it('ignores search and listing tools', () => {
    expect(
      ops(
        step('grep', { path: 'src', pattern: 'x' }),
        step('Glob', { pattern: '**/*.ts', path: 'src' }),
        step('ls', { path: '.' }),
      ),
    ).toEqual({
      read: [],
      modified: [],
    });
  });

  it('matches tool names case-insensitively and through MCP-style prefixes', () => {
    expect(
      ops(
        step('READ_FILE', { path: 'a.ts' }),
        step('mcp__filesystem__write_file', { path: 'b.ts' }),
        step('functions.read_file', { path: 'c.ts' }),
      ),
    ).toEqual({
      read: ['a.ts', 'c.ts'],
      modified: ['b.ts'],
    });
  });

  it('splits editor tools by command: view reads, the rest write', () => {
    for (const tool of ['str_replace_editor', 'str_replace_based_edit_tool']) {
      expect(
        ops(
          step(tool, { command: 'view', path: '/repo/read.ts' }),
          step(tool, { command: 'create', path: '/repo/new.ts', file_text: '' }),
          step(tool, { command: 'str_replace', path: '/repo/changed.ts', old_str: 'a', new_str: 'b' }),
          step(tool, { command: 'insert', path: '/repo/inserted.ts', insert_line: 1, new_str: 'x' }),
        ),
      ).toEqual({ read: ['/repo/read.ts'], modified: ['/repo/changed.ts', '/repo/inserted.ts', '/repo/new.ts'] });
    }
  });

  it('parses paths from apply_patch text', () => {
    const patch = [
      '*** Begin Patch',
      '*** Update File: src/app.ts',
      '@@ def',
      '-old',
      '+new',
      '*** Move to: src/app2.ts',
      '*** Add File: src/new.ts',
      '+hello',
      '*** Delete File: src/old.ts',
      '*** End Patch',
    ].join('\n');
    expect(ops(step('apply_patch', { input: patch }))).toEqual({
      read: [],
      modified: ['src/app.ts', 'src/app2.ts', 'src/new.ts', 'src/old.ts'],
    });
    expect(ops(step('apply_patch', patch))).toEqual({
      read: [],
      modified: ['src/app.ts', 'src/app2.ts', 'src/new.ts', 'src/old.ts'],
    });
  });

  it('parses paths from unified and git diffs, skipping /dev/null and timestamps', () => {
    const diff = [
      'diff --git a/lib/x.js b/lib/x.js',
      '--- a/lib/x.js\t2024-01-01 00:00:00',
      '+++ b/lib/x.js\t2024-01-02 00:00:00',
      '@@ -1 +1 @@',
      '--- not a header (removed SQL comment)',
      '--- /dev/null',
      '+++ b/lib/created.js',
    ].join('\n');
    expect(ops(step('patch', { patch: diff }))).toEqual({ read: [], modified: ['lib/created.js', 'lib/x.js'] });
  });

  it("reads OpenAI's apply_patch operation shape", () => {
    expect(
      ops(step('apply_patch', { operation: { type: 'update_file', path: 'src/op.ts', diff: '@@\n-a\n+b' } })),
    ).toEqual({
      read: [],
      modified: ['src/op.ts'],
    });
  });

  it('does not take diff headers from the content of a write with a path', () => {
    expect(ops(step('write_file', { path: 'fix.patch', content: '--- a/other.ts\n+++ b/other.ts' }))).toEqual({
      read: [],
      modified: ['fix.patch'],
    });
  });

  it('skips calls whose result is an error or a denial', () => {
    expect(
      ops(
        step('read_file', { path: 'missing.ts' }, { type: 'error-text', value: 'ENOENT' }),
        step('write_file', { path: 'denied.ts' }, { type: 'execution-denied' }),
        step('read_file', { path: 'ok.ts' }),
      ),
    ).toEqual({ read: ['ok.ts'], modified: [] });
  });

  it('lists a file read and modified only under modified, and dedupes', () => {
    expect(
      ops(
        step('read_file', { path: 'a.ts' }),
        step('edit', { path: 'a.ts' }),
        step('read_file', { path: 'a.ts' }),
        step('read_file', { path: 'b.ts' }),
      ),
    ).toEqual({
      read: ['b.ts'],
      modified: ['a.ts'],
    });
  });

  it('merges with the previous file ops', () => {
    const previous = { read: ['old-read.ts', 'will-change.ts'], modified: ['old-mod.ts'] };
    const merged = extractFileOps(
      [
        ...step('edit', { path: 'will-change.ts' }),
        ...step('read', { path: 'old-mod.ts' }),
        ...step('read', { path: 'new.ts' }),
      ],
      DEFAULT_FILE_OPS,
      previous,
    );
    // The most recently touched last: reading a modified file moves it to last among the modified.
    expect(merged).toEqual({ read: ['old-read.ts', 'new.ts'], modified: ['will-change.ts', 'old-mod.ts'] });
    expect(previous).toEqual({ read: ['old-read.ts', 'will-change.ts'], modified: ['old-mod.ts'] }); // not mutated
  });

  it('keeps the most recently touched paths, at most FILE_OPS_MAX_PER_LIST per list', () => {
    const reads = Array.from({ length: FILE_OPS_MAX_PER_LIST + 10 }, (_, i) => step('read', { path: `r${i}.ts` }));
    const writes = Array.from({ length: FILE_OPS_MAX_PER_LIST + 10 }, (_, i) => step('edit', { path: `w${i}.ts` }));
    // r0 is read again last: it is the newest, not the oldest.
    const merged = ops(...reads, ...writes, step('read', { path: 'r0.ts' }));
    expect(merged.read).toHaveLength(FILE_OPS_MAX_PER_LIST);
    expect(merged.modified).toHaveLength(FILE_OPS_MAX_PER_LIST);
    const { read, modified } = extractFileOps([...reads, ...writes, ...step('read', { path: 'r0.ts' })].flat());
    expect(read.slice(0, 2)).toEqual(['r11.ts', 'r12.ts']);
    expect(read.at(-1)).toBe('r0.ts');
    expect(modified.slice(0, 1)).toEqual(['w10.ts']);
    expect(modified.at(-1)).toBe(`w${FILE_OPS_MAX_PER_LIST + 9}.ts`);
  });

  it('takes a stored list of any length (a memo from before the bound) and bounds it', () => {
    const previous = {
      read: Array.from({ length: 5_000 }, (_, i) => `old${String(i).padStart(4, '0')}.ts`),
      modified: ['m.ts'],
    };
    const merged = extractFileOps(step('read', { path: 'new.ts' }), DEFAULT_FILE_OPS, previous);
    expect(merged.read).toHaveLength(FILE_OPS_MAX_PER_LIST);
    expect(merged.read.at(-1)).toBe('new.ts');
    expect(merged.read[0]).toBe('old4501.ts');
    expect(merged.modified).toEqual(['m.ts']);
  });

  it('honours a custom config', () => {
    const config = { readTools: ['fetch_doc'], writeTools: ['save'], pathKeys: ['doc'] };
    const messages = [
      ...step('fetch_doc', { doc: 'docs/a.md' }),
      ...step('save', { doc: 'docs/b.md' }),
      ...step('read_file', { path: 'x.ts' }),
    ];
    expect(extractFileOps(messages, config)).toEqual({ read: ['docs/a.md'], modified: ['docs/b.md'] });
  });

  it('ignores values that are not paths', () => {
    expect(
      ops(
        step('read_file', { path: '' }),
        step('read_file', { path: 'a\nb' }),
        step('read_file', { path: 42 }),
        step('read_file', null),
      ),
    ).toEqual({
      read: [],
      modified: [],
    });
  });
});

describe('renderFileOpsFooter', () => {
  it('sorts the lists it is given in the order of touch, so the footer is as it was for sorted ones', () => {
    expect(renderFileOpsFooter({ read: ['b.ts', 'a.ts', 'B.ts'], modified: ['d.ts', 'c.ts'] })).toBe(
      renderFileOpsFooter({ read: ['B.ts', 'a.ts', 'b.ts'], modified: ['c.ts', 'd.ts'] }),
    );
    expect(renderFileOpsFooter({ read: ['z.ts', 'y.ts', 'x.ts'], modified: [] }, 2)).toBe(
      '<files>\nread: x.ts, y.ts (+1 more)\n</files>',
    );
  });

  it('renders both lists', () => {
    expect(renderFileOpsFooter({ read: ['a.ts', 'b.ts'], modified: ['c.ts'] })).toBe(
      '<files>\nread: a.ts, b.ts\nmodified: c.ts\n</files>',
    );
    expect(renderFileOpsFooter({ read: [], modified: ['c.ts'] })).toBe('<files>\nmodified: c.ts\n</files>');
  });

  it('is empty when there are no files', () => {
    expect(renderFileOpsFooter({ read: [], modified: [] })).toBe('');
  });

  it('clips long lists', () => {
    const read = Array.from({ length: 12 }, (_, i) => `f${String(i).padStart(2, '0')}.ts`);
    expect(renderFileOpsFooter({ read, modified: [] }, 3)).toBe(
      '<files>\nread: f00.ts, f01.ts, f02.ts (+9 more)\n</files>',
    );
    expect(renderFileOpsFooter({ read, modified: [] }, 0)).toBe('<files>\nread: (+12 more)\n</files>');
  });

  it('can be stripped from a summary again', () => {
    const summary = '## Task state\nDone.';
    const withFooter = `${summary}\n\n${renderFileOpsFooter({ read: ['a.ts'], modified: [] })}\n`;
    expect(stripFileOpsFooter(withFooter)).toBe(summary);
    expect(stripFileOpsFooter(summary)).toBe(summary);
  });
});
