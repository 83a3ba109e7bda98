// `context-guard replay` on small fixture transcripts of every format (test/cli/fixtures), run
// in-process through the command's main(argv).
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { summarizeErrors } from '../../cli/estimate.ts';
import { run } from './run.ts';
import { type ReplayReport, replay } from '../../cli/replay.ts';
import { detectFormat, parseTranscript, readTranscript } from '../../cli/transcripts/index.ts';

const fixture = (name: string): string => join(import.meta.dirname, 'fixtures', name);

const FIXTURES = [
  { file: 'claude-code.jsonl', format: 'claude-code', calls: 4, real: [12_003, 14_105, 15_154, 15_210] },
  { file: 'codex.jsonl', format: 'codex', calls: 3, real: [9_000, 11_200, 11_300] },
  { file: 'mini-swe-agent.traj.json', format: 'mini-swe-agent', calls: 3, real: [560, 1_810, 1_560] },
  { file: 'openai.json', format: 'openai', calls: 4, real: [] },
  { file: 'ai-sdk.json', format: 'ai-sdk', calls: 7, real: [] },
] as const;

describe('transcript formats', () => {
  for (const f of FIXTURES) {
    it(`detects and parses ${f.format}`, () => {
      const text = readFileSync(fixture(f.file), 'utf8');
      expect(detectFormat(text, f.file)).toBe(f.format);
      const t = readTranscript(fixture(f.file));
      expect(t.format).toBe(f.format);
      expect(t.calls).toHaveLength(f.calls);
      expect(t.issues).toEqual([]);
      const real = t.calls.map((c) => c.inputTokens).filter((n) => n !== undefined);
      expect(real).toEqual(f.real);
      // every call's prompt extends the previous one (a growing history), and the host order is kept
      for (const [i, call] of t.calls.entries()) {
        const previous = t.calls[i - 1];
        if (previous) expect(call.messages.length).toBeGreaterThan(previous.messages.length);
      }
    });
  }

  it('reads the Codex items into messages: reasoning summary, tool calls and outputs, the model and window', () => {
    const t = readTranscript(fixture('codex.jsonl'));
    expect(t.modelId).toBe('gpt-5-codex');
    expect(t.contextWindow).toBe(272_000);
    const last = t.calls[2]!;
    expect(last.messages.map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'tool', 'assistant', 'tool']);
    expect(last.response?.role).toBe('assistant');
    expect(t.calls.map((c) => c.skip)).toEqual(['first', undefined, undefined]);
  });

  it('can be forced with --format, and an unknown file is a clear error (exit 2)', async () => {
    const t = parseTranscript(readFileSync(fixture('openai.json'), 'utf8'), 'x.json', 'ai-sdk');
    expect(t.format).toBe('ai-sdk');
    const { code, stderr } = await run(['replay', fixture('../replay.test.ts'), '--window', '8000']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/context-guard replay: .*(unknown transcript format|not valid JSON)/);
  });
});

describe('replay', () => {
  it('pairs estimates with the real counts and summarizes the error of the scored calls', async () => {
    const report = await replay({ file: fixture('claude-code.jsonl'), window: 200_000 });
    expect(report.format).toBe('claude-code');
    expect(report.windowSource).toBe('option');
    expect(report.threshold).toBe(180_000);
    expect(report.calls.map((c) => c.real)).toEqual([12_003, 14_105, 15_154, 15_210]);
    expect(report.calls.map((c) => c.scored)).toEqual([false, true, true, true]);
    for (const c of report.calls) {
      expect(c.error).toBeCloseTo((c.estimate - c.real!) / c.real!, 12);
      expect(c.fraction).toBeCloseTo(c.sent / 200_000, 12);
    }
    const scored = report.calls.filter((c) => c.scored).map((c) => c.error!);
    const s = report.summary;
    expect(s.calls).toBe(4);
    expect(s.callsWithRealCount).toBe(4);
    expect(s.compactions).toBe(0);
    expect(s.largestPrompt).toEqual({ call: 4, estimate: report.calls[3]!.estimate, real: 15_210 });
    expect(s.estimateError).toMatchObject(summarizeErrors(scored));
    expect(s.estimateError!.n).toBe(3);
    expect(Math.abs(s.estimateError!.medianAbs)).toBeLessThan(0.05);
  });

  it('takes the window from the registry for the file model, and from the Codex file', async () => {
    const msa = await replay({ file: fixture('mini-swe-agent.traj.json') });
    expect(msa.windowSource).toBe('registry');
    expect(msa.contextWindow).toBeGreaterThan(60_000);
    const codex = await replay({ file: fixture('codex.jsonl') });
    expect(codex).toMatchObject({ windowSource: 'file', contextWindow: 272_000 });
    const byModel = await replay({ file: fixture('openai.json'), model: 'gpt-4o' });
    expect(byModel).toMatchObject({ windowSource: 'model', contextWindow: 128_000, modelId: 'gpt-4o' });
  });

  it('compacts when the prompt reaches the threshold, and reports before/after and the strategy', async () => {
    const report = await replay({ file: fixture('ai-sdk.json'), window: 4_000 });
    const compactions = report.calls.filter((c) => c.compaction);
    expect(compactions.length).toBeGreaterThan(0);
    const k = compactions[0]!.compaction!;
    expect(k.tokensBefore).toBeGreaterThan(report.threshold);
    expect(k.tokensAfter).toBeLessThan(k.tokensBefore);
    expect(typeof k.strategy).toBe('string');
    expect(report.summary.compactions).toBe(compactions.length);
    for (const c of report.calls) expect(c.sent).toBeLessThanOrEqual(report.threshold);
    const { stdout } = await run(['replay', fixture('ai-sdk.json'), '--window', '4000']);
    expect(stdout).toMatch(/COMPACTION \(threshold, [a-z-]+.*\): [\d,]+ -> [\d,]+ tokens/);
    expect(stdout).toMatch(/\[ctx: \d+%\]/);
  });

  it('counts the calls over the window and the threshold from the same figures as its per-call log', async () => {
    // The fixture's real counts show ~12k tokens the file does not hold (Claude Code's system prompt
    // and tools): over the threshold of a 14k window on their own.
    const report = await replay({ file: fixture('claude-code.jsonl'), window: 14_000 });
    const s = report.summary;
    expect(s.overflows).toBe(report.calls.filter((c) => c.sent > report.threshold).length);
    expect(s.overWindow).toBe(report.calls.filter((c) => c.sent > report.contextWindow).length);
    expect(s.overflows).toBeGreaterThan(0);
    const { stdout } = await run(['replay', fixture('claude-code.jsonl'), '--window', '14000']);
    const log = stdout.split('\n\n')[0] as string;
    const marked = log.split('\n').filter((l) => / {2}(over the threshold|OVER THE WINDOW)$/.test(l));
    expect(marked).toHaveLength(s.overflows);
    expect((log.match(/OVERFLOW\)/g) ?? []).length).toBe(s.overflowCompactions);
    expect(stdout).toContain(`over the threshold: ${s.overflows}; over the window: ${s.overWindow}`);
    // The meter is the prompt the provider counts, the hidden part included (12k of 14k, not 1%).
    for (const c of report.calls.slice(1)) expect(c.fraction).toBeGreaterThan(0.8);
    expect(s.fixedOverThreshold?.limit).toBeGreaterThan(report.threshold);
    expect(stdout).toMatch(/the fixed part of every prompt \([\d,]+ tokens/);
  });

  it('says when the real counts show a large part the file does not contain', async () => {
    const report = await replay({ file: fixture('claude-code.jsonl'), window: 200_000 });
    expect(report.summary.hiddenTokens).toBeGreaterThan(11_000);
    expect(report.summary.hiddenTokens).toBeLessThan(12_003);
    const { stdout } = await run(['replay', fixture('claude-code.jsonl'), '--window', '200000', '--quiet']);
    expect(stdout).toMatch(/the file's real counts show about 11,\d{3} tokens it does not contain/);
    // A file without real counts, or whose counts its text explains, says nothing of the kind.
    for (const [file, window] of [
      ['openai.json', '8000'],
      ['mini-swe-agent.traj.json', '8000'],
    ] as const) {
      const other = await run(['replay', fixture(file), '--window', window, '--quiet']);
      expect(other.stdout).not.toContain('does not contain');
    }
  });

  it('a malformed line is an error naming its line number, and the rest is replayed (exit 1)', async () => {
    const { code, stdout, stderr } = await run([
      'replay',
      fixture('claude-code-malformed.jsonl'),
      '--window',
      '200000',
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain('claude-code-malformed.jsonl line 6: not valid JSON');
    expect(stdout).toContain('calls: 4 (4 with a real count)');
    expect(stdout).toContain('malformed: 1 skipped');
  });
});

describe('the command', () => {
  it('prints the per-call log and the summary', async () => {
    const { code, stdout, stderr } = await run(['replay', fixture('mini-swe-agent.traj.json'), '--window', '8000']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^call 1 {2}est +[\d,]+ {2}real +560 +[−+]\d+\.\d\d%\* \[ctx: \d+%\]/m);
    expect(stdout).toContain('calls: 3 (3 with a real count)');
    expect(stdout).toMatch(/estimate error \(2 scored calls\): median \|error\| \d+\.\d\d%, p95/);
    const quiet = await run(['replay', fixture('mini-swe-agent.traj.json'), '--window', '8000', '--quiet']);
    expect(quiet.stdout).not.toMatch(/^call 1/m);
    expect(quiet.stdout).toContain('calls: 3');
  });

  it('--json prints the report', async () => {
    const { code, stdout } = await run(['replay', fixture('codex.jsonl'), '--json', '--target', '0.3']);
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as ReplayReport;
    expect(Object.keys(report)).toEqual([
      'file',
      'format',
      'modelId',
      'contextWindow',
      'windowSource',
      'threshold',
      'warnAt',
      'calls',
      'summary',
      'issues',
    ]);
    expect(report.calls).toHaveLength(3);
    expect(Object.keys(report.calls[1]!)).toEqual(
      expect.arrayContaining(['call', 'line', 'messages', 'estimate', 'real', 'error', 'scored', 'sent', 'fraction']),
    );
    expect(report.summary).toMatchObject({ calls: 3, callsWithRealCount: 3, compactions: 0 });
  });

  it('--html writes a self-contained page with the chart', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'cg-replay-')), 'report.html');
    const { code } = await run(['replay', fixture('ai-sdk.json'), '--window', '4000', '--html', out, '--quiet']);
    expect(code).toBe(0);
    const html = readFileSync(out, 'utf8');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<svg');
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script|<link|src=/);
    expect(html).toContain('threshold 3,200');
    expect(html).toMatch(/compaction \(threshold/);
  });

  it('rejects bad options with exit 2', async () => {
    expect((await run(['replay', fixture('codex.jsonl'), '--window', 'lots'])).code).toBe(2);
    expect((await run(['replay', fixture('codex.jsonl'), '--summarizer', 'gpt'])).code).toBe(2);
    const unknown = await run(['replay', fixture('openai.json')]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('pass --window <tokens> or --model <id>');
  });
});
