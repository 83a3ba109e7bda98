// `context-guard replay` on hostile and huge files (issue 22): whatever the file holds, what the
// command prints carries no control character from it (a transcript could set the terminal's title
// and colours), counts no provider reports are printed as rejected (a 1e308 count showed as
// `∞ −NaN%`), and a file's calls share one history instead of a copy each (20,000 calls took 3.5 GB;
// bench/replay.ts times 1k / 10k / 100k calls).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from './run.ts';
import { replayTranscript } from '../../cli/replay.ts';
import {
  GrowingPrompt,
  readTranscript,
  type ReplayCall,
  type Transcript,
  withPrompt,
} from '../../cli/transcripts/index.ts';
import type { GuardMessage } from '../../src/index.ts';

const ESC = '\u001b';
const file = (name: string, value: unknown): string => {
  const path = join(mkdtempSync(join(tmpdir(), 'cg-hostile-')), name);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
};

/** An OpenAI message list of `calls` tool calls, each assistant message with a usage count from `count(i)`. */
function session(calls: number, count: (i: number) => unknown, model = 'gpt-4o'): unknown {
  const messages: unknown[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Read the files.' },
  ];
  for (let i = 0; i < calls; i++) {
    const id = `c${i}`;
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: '{}' } }],
        usage: { prompt_tokens: count(i), completion_tokens: 10 },
      },
      { role: 'tool', tool_call_id: id, content: 'line of output '.repeat(20) },
    );
  }
  return { model, messages };
}

/** Whether `text` holds a control character but the line feed (ESC, BEL, CSI 0x9b, ...). */
const hasControl = (text: string): boolean =>
  [...text].some((c) => {
    const code = c.charCodeAt(0);
    return (code < 0x20 && code !== 0x0a) || (code >= 0x7f && code <= 0x9f);
  });

describe('replay on hostile files', () => {
  it('prints no control character from the file: model ids, malformed-line reasons', async () => {
    const title = `${ESC}]0;pwned\u0007${ESC}[31m`;
    const path = file(
      'hostile.json',
      session(3, (i) => 1_000 + i * 100, `gpt-4o${title}`),
    );
    const { stdout, stderr } = await run(['replay', path, '--window', '128000']);
    expect(stdout).toContain('gpt-4o');
    expect(hasControl(stdout)).toBe(false);
    expect(hasControl(stderr)).toBe(false);
    // A JSONL file whose bad line is echoed in the parse error.
    const jsonl = file(
      'hostile.jsonl',
      `{"type":"session_meta","payload":{"model":"x${title}"}}\n{bad json ${title}\n`,
    );
    const bad = await run(['replay', jsonl, '--format', 'codex', '--window', '128000']);
    expect(hasControl(bad.stdout + bad.stderr)).toBe(false);
  });

  it('prints non-finite and absurd counts as rejected, never as ∞ or NaN', async () => {
    const counts = [1_000, 1e308, 2_000, Number.MAX_SAFE_INTEGER * 4, 3_000, 1e12];
    const path = file(
      'absurd.json',
      session(counts.length, (i) => counts[i]),
    );
    const { stdout } = await run(['replay', path, '--window', '128000']);
    expect(stdout).not.toMatch(/∞|NaN|Infinity/);
    const lines = stdout.split('\n').filter((l) => l.startsWith('call '));
    expect(lines).toHaveLength(counts.length);
    expect(lines[1]).toMatch(/real +rejected/);
    expect(lines[3]).toMatch(/real +rejected/);
    expect(lines[5]).toMatch(/real +rejected/);
    expect(lines[2]).toMatch(/real +2,000/);
    expect(stdout).toMatch(/calls: 6 \(3 with a real count; 3 rejected\)/);
    const json = await run(['replay', path, '--window', '128000', '--json']);
    expect(json.stdout).not.toMatch(/null|Infinity/);
    const report = JSON.parse(json.stdout) as { calls: Array<{ real?: number; rejected?: string }> };
    expect(report.calls[1]?.real).toBeUndefined();
    expect(report.calls[1]?.rejected).toBe('1e+308');
  });

  it("a file's calls share one history: each call's messages are made when read", () => {
    const path = file(
      'long.json',
      session(2_000, (i) => 1_000 + i * 60),
    );
    const t = readTranscript(path);
    expect(t.calls).toHaveLength(2_000);
    const last = t.calls.at(-1)!;
    const a = last.messages;
    const b = last.messages;
    // Made on each read (no array per call is held), with the same messages.
    expect(a).not.toBe(b);
    expect(a).toEqual(b);
    expect(a[0]).toBe(b[0]);
    expect(last.messageCount).toBe(a.length);
    expect(t.calls[0]!.messages.at(-1)).toBe(last.messages[t.calls[0]!.messageCount - 1]);
  });

  it('reads each message of the history once per pass, not the whole history on every call', async () => {
    // A file's history behind a proxy that counts the messages read out of it.
    const reads = { n: 0 };
    const backing: GuardMessage[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Read the files.' },
    ];
    const history = new Proxy(backing, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads.n++;
        return Reflect.get(target, key, receiver);
      },
    });
    const calls: ReplayCall[] = [];
    for (let i = 0; i < 2_000; i++) {
      const response: GuardMessage = {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'read_file', input: { path: `f${i}.ts` } }],
      };
      calls.push(withPrompt({ tools: [], inputTokens: 1_000 + i * 60, response }, history));
      backing.push(response, {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: `c${i}`,
            toolName: 'read_file',
            output: { type: 'text', value: 'line of output '.repeat(20) },
          },
        ],
      });
    }
    const transcript: Transcript = {
      file: 'long.json',
      format: 'openai',
      modelId: 'gpt-4o',
      calls,
      issues: [],
      hostCompactions: [],
    };
    const report = await replayTranscript(transcript, { file: 'long.json', window: 128_000 });
    expect(report.summary.calls).toBe(2_000);
    expect(report.summary.compactions).toBeGreaterThan(0);
    // Two passes (estimation, guard), each reading a message when the call that adds it comes. A
    // copy of the history per call read 4,000,000.
    expect(reads.n).toBeLessThanOrEqual(2 * backing.length);
  });

  it('hands each call the last array grown by what it added, and a new one for a new history', () => {
    const a: GuardMessage[] = [{ role: 'user', content: 'one' }];
    const b: GuardMessage[] = [{ role: 'user', content: 'after the host compacted' }];
    const call = (history: GuardMessage[], end: number): ReplayCall =>
      withPrompt({ tools: [] }, history, end) as ReplayCall;
    const first = call(a, 1);
    a.push({ role: 'assistant', content: 'two' }, { role: 'user', content: 'three' });
    const second = call(a, 3);
    const third = call(b, 1);
    const prompts = new GrowingPrompt();
    const p1 = prompts.of(first);
    expect(p1).toEqual([a[0]]);
    const p2 = prompts.of(second);
    expect(p2).toBe(p1);
    expect(p2).toEqual(a);
    expect(prompts.copied).toBe(3);
    const p3 = prompts.of(third);
    expect(p3).not.toBe(p2);
    expect(p3).toEqual(b);
    // The array of the earlier history is left as it was.
    expect(p2).toEqual(a);
    // A call whose prompt is shorter than the last one's starts a new array too.
    expect(prompts.of(first)).toEqual([a[0]]);
    expect(p2).toHaveLength(3);
  });
});
