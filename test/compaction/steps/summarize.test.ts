// Step 2 alone (compaction/steps/summarize.ts): the cut (on unit boundaries, keep-recent or
// summarize-all, at most half of the conversation kept by a manual compaction), what stays verbatim
// (system messages, the small first request, the latest request rendered after the summary), the
// previous summary updated rather than summarized, and the file list with its paths redacted.
import { describe, expect, it } from 'vitest';
import type { GuardMessage } from '../../../src/index.ts';
import { continuationNote, rememberOwn, summaryMessage } from '../../../src/compaction/placement.ts';
import { summarizeOlder } from '../../../src/compaction/steps/summarize.ts';
import { DEFAULT_FOOTER_MAX_PER_LIST, FILE_OPS_MAX_PER_LIST, type FileOps } from '../../../src/compaction/file-ops.ts';
import { emptyMemo } from '../../../src/compaction/memo.ts';
import { Work } from '../../../src/compaction/work.ts';
import { assistant, system, toolStep, user } from '../../helpers.ts';
import { SETTINGS, fakeSummarize, pipelineInput, text } from './harness.ts';

const SYS = system('sys');
const FIRST = user('first request: migrate billing');

/** [system, first, then `pairs` × (A<i>, U<i>) of `chars` characters]; the last U is the latest request. */
function chat(pairs: number, chars = 4_000, prefix = ''): GuardMessage[] {
  const messages: GuardMessage[] = [SYS, FIRST];
  for (let i = 1; i <= pairs; i++)
    messages.push(assistant(text(`${prefix}A${i}`, chars)), user(text(`${prefix}U${i}`, chars)));
  return messages;
}

/** The first characters of each message's text: which messages a prompt or a summarizer call holds. */
function labels(messages: readonly GuardMessage[]): string[] {
  return messages.map((m) => {
    const content = m.content as unknown;
    const t = typeof content === 'string' ? content : JSON.stringify(content);
    if (m === SYS) return 'sys';
    if (m === FIRST) return 'first';
    if (t.startsWith('[Context Summary]')) return 'summary';
    if (t.startsWith('[Continue]')) return 'continue';
    return (t.match(/(?:^|"text":")([A-Z]+\d+|BIG|mine)/) ?? ['', m.role])[1] as string;
  });
}

async function summarized(
  messages: GuardMessage[],
  overrides: Parameters<typeof pipelineInput>[1] = {},
  answer?: Parameters<typeof fakeSummarize>[0],
) {
  const fake = fakeSummarize(answer);
  const h = pipelineInput(messages, { summarize: fake.summarize, ...overrides });
  const w = new Work(h.input);
  await summarizeOlder(w);
  return { w, calls: fake.calls, starts: h.starts };
}

describe('summarizeOlder: the cut', () => {
  it('keeps the newest messages within the tail budget and summarizes the rest', async () => {
    // 8 messages of 1,000 tokens: the 2,000-token tail keeps A4 and U4.
    const { w, calls, starts } = await summarized(chat(4));
    expect(labels(calls[0]!.messages)).toEqual(['A1', 'U1', 'A2', 'U2', 'A3', 'U3']);
    expect(labels(w.cur.view.messages)).toEqual(['sys', 'first', 'summary', 'A4', 'U4']);
    expect(w.memo.summary).toMatchObject({ covers: { messages: 8 }, keep: [0, 1], text: 'SUMMARY of 6 messages' });
    expect(w.memo.summary).not.toHaveProperty('request');
    expect(w.steps).toEqual(['summary']);
    expect(w.stats).toMatchObject({ summarized: 6, splitTurn: false, calls: 1, inputTokens: 10 });
    expect(starts()).toBe(1);
    expect(w.under()).toBe(true);
  });

  it('cuts between units, never between a tool call and its results', async () => {
    // A call with two parallel results (~1,900 tokens with the request) does not fit the tail whole.
    const [call1, result1] = toolStep('p1', { path: 'a.ts' }, text('RA', 3_600)) as [GuardMessage, GuardMessage];
    const [, result2] = toolStep('p2', { path: 'b.ts' }, text('RB', 3_600)) as [GuardMessage, GuardMessage];
    const parallel: GuardMessage = {
      role: 'assistant',
      content: [
        ...(call1.content as never[]),
        { type: 'tool-call', toolCallId: 'p2', toolName: 'read_file', input: { path: 'b.ts' } },
      ],
    };
    // The model has seen the results (it answered after them): not the latest tool step.
    const messages = [...chat(2), parallel, result1, result2, assistant('A8 noted'), user(text('U9', 800))];
    const { w } = await summarized(messages);
    expect(w.memo.summary?.covers.messages).toBe(9);
    expect(labels(w.cur.view.messages)).toEqual(['sys', 'first', 'summary', 'A8', 'U9']);
    // With a larger tail, the whole unit stays.
    const larger = await summarized(messages, { settings: { ...SETTINGS, keepRecentTokens: 2_400 } });
    expect(larger.w.memo.summary?.covers.messages).toBe(6);
    expect(larger.w.cur.view.messages.slice(3).map((m) => m.role)).toEqual([
      'assistant',
      'tool',
      'tool',
      'assistant',
      'user',
    ]);
    expect(larger.w.cur.view.orphanResults + larger.w.cur.view.unansweredCalls).toBe(0);
  });

  it('keeps the latest tool step whole when its results fit, even over the tail budget', async () => {
    // ~1,900 tokens of results the model has not seen yet, after the request, in a 2,000-token tail
    // that the summary and the request leave too small for them.
    const [call1, result1] = toolStep('p1', { path: 'a.ts' }, text('RA', 3_600)) as [GuardMessage, GuardMessage];
    const [call2, result2] = toolStep('p2', { path: 'b.ts' }, text('RB', 3_600)) as [GuardMessage, GuardMessage];
    const messages = [...chat(4), call1, result1, call2, result2];
    for (const retention of ['keep-recent', 'summarize-all'] as const) {
      const { w } = await summarized(messages, { settings: { ...SETTINGS, retention, keepRecentTokens: 500 } });
      expect(w.cur.view.messages.slice(-2), retention).toEqual([call2, result2]);
    }
  });

  it('summarizes everything but the latest request with summarize-all, sending it after the summary', async () => {
    const { w, calls } = await summarized(chat(4), { settings: { ...SETTINGS, retention: 'summarize-all' } });
    // The first request is not kept apart: that is keep-recent's. The summarizer reads the latest
    // request too (the steps are summarized with it in view), but it is not replaced.
    expect(labels(calls[0]!.messages)).toEqual(['first', 'A1', 'U1', 'A2', 'U2', 'A3', 'U3', 'A4', 'U4']);
    expect(w.stats.summarized).toBe(8);
    expect(labels(w.cur.view.messages)).toEqual(['sys', 'summary', 'U4', 'continue']);
    expect(w.memo.summary).toMatchObject({ covers: { messages: 10 }, keep: [0], request: 9 });
    expect(w.memo.summary?.after).toEqual([continuationNote()]);
    expect(w.stats.splitTurn).toBe(false);
  });

  it('never replaces the latest request when the cut passes it (a split turn)', async () => {
    const messages = [
      ...chat(3),
      ...toolStep('t1', { path: 'a.ts' }, text('RA', 3_600)),
      ...toolStep('t2', { path: 'b.ts' }, text('RB', 3_600)),
    ];
    const { w, calls } = await summarized(messages);
    // Read by the summarizer for context, sent whole all the same.
    expect(labels(calls[0]!.messages)).toContain('U3');
    // The request first, then the tail of its turn: both tool steps (~1,900 tokens).
    expect(labels(w.cur.view.messages)).toEqual([
      'sys',
      'first',
      'summary',
      'U3',
      'continue',
      'assistant',
      'tool',
      'assistant',
      'tool',
    ]);
    expect(w.memo.summary?.request).toBe(7);
    expect(w.stats.splitTurn).toBe(true);
  });

  it('summarizes the first request too when it is not small, or not to be kept', async () => {
    const big = [SYS, user(text('BIG', 4_000)), ...chat(4).slice(2)];
    expect(labels((await summarized(big)).calls[0]!.messages)[0]).toBe('BIG');
    const off = await summarized(chat(4), { settings: { ...SETTINGS, keepFirstUserMessage: false } });
    expect(labels(off.calls[0]!.messages)[0]).toBe('first');
    expect(labels(off.w.cur.view.messages)).toEqual(['sys', 'summary', 'A4', 'U4']);
  });

  it('does nothing when the conversation is a single unit', async () => {
    const { w, calls, starts } = await summarized([SYS, user(text('U1', 40_000))]);
    expect(calls).toEqual([]);
    expect(w.steps).toEqual([]);
    expect(starts()).toBe(0);
  });

  it('leaves a small conversation alone on a threshold compaction, but a manual one summarizes half of it', async () => {
    const small = chat(2, 400);
    expect((await summarized(small)).calls).toEqual([]);
    const manual = await summarized(small, { reason: 'manual' });
    expect(labels(manual.calls[0]!.messages)).toEqual(['A1', 'U1']);
    expect(labels(manual.w.cur.view.messages)).toEqual(['sys', 'first', 'summary', 'A2', 'U2']);
  });
});

describe('summarizeOlder: the summary', () => {
  it('updates the previous summary instead of summarizing it', async () => {
    const first = await summarized(chat(4));
    const grown = [...chat(4), ...chat(3, 4_000, 'N').slice(2)];
    const memo = first.w.finish(false).memo;
    const next = await summarized(grown, { memo, summaryApplies: true });
    const call = next.calls[0]!;
    expect(call.previousSummary).toBe('SUMMARY of 6 messages');
    expect(labels(call.messages)).not.toContain('summary');
    expect(labels(call.messages)).toEqual(['A4', 'U4', 'NA1', 'NU1', 'NA2', 'NU2']);
    expect(labels(next.w.cur.view.messages)).toEqual(['sys', 'first', 'summary', 'NA3', 'NU3']);
    expect(next.w.memo.summary?.keep).toEqual([0, 1]);
  });

  it('recognizes its own summary in a history the host kept compacted', async () => {
    const old = summaryMessage('OLD BODY');
    const messages = [SYS, FIRST, old, ...chat(4).slice(2)];
    for (const own of [rememberOwn(undefined, [old]), undefined]) {
      const { calls } = await summarized(messages, {
        memo: { tools: {}, clips: {}, compactions: 1, ...(own ? { own } : {}) },
      });
      expect(calls[0]!.previousSummary).toBe('OLD BODY');
      expect(labels(calls[0]!.messages)).not.toContain('summary');
    }
  });

  it('summarizes a user’s look-alike of a summary as the user’s words', async () => {
    const mine = user(`[Context Summary] mine ${text('x', 3_990)}`);
    const messages = [SYS, FIRST, mine, ...chat(4).slice(2)];
    const { calls } = await summarized(messages);
    expect(calls[0]!.previousSummary).toBeUndefined();
    expect(calls[0]!.messages).toContain(mine);
  });

  it('records a mechanical digest as such', async () => {
    const { w } = await summarized(chat(4), {}, () => ({ mechanical: true, text: '[Mechanical digest: ...]' }));
    expect(w.steps).toEqual(['mechanical']);
  });

  it('aims at the threshold once a digest grew to keep the user’s words', async () => {
    const { w, calls } = await summarized(chat(4), {}, () => ({
      mechanical: true,
      extended: true,
      text: text('D', 12_000),
    }));
    expect(calls[0]!.userRoomTokens).toBeGreaterThan(calls[0]!.roomTokens);
    expect(w.stats.extended).toBe(true);
    expect(w.cur.tokens).toBeGreaterThan(w.settings.target);
    expect(w.cur.tokens).toBeLessThanOrEqual(8_000);
    expect(w.under()).toBe(true);
  });

  it('appends the files read and modified, their paths redacted', async () => {
    const secret = 'https://user:TOKEN123@git.example.com/repo.git';
    const messages = [
      SYS,
      FIRST,
      ...toolStep('r1', { path: secret }, text('R1', 4_000)),
      ...toolStep('w1', { file_path: 'src/app.ts', content: 'x' }, 'ok', 'write_file'),
      ...chat(3).slice(2),
    ];
    const redact = (t: string) => t.replaceAll('TOKEN123', '***');
    const { w } = await summarized(messages, { redact });
    expect(w.memo.summary?.fileOps).toEqual({
      read: ['https://user:***@git.example.com/repo.git'],
      modified: ['src/app.ts'],
    });
    expect(w.stats.summary).toContain('https://user:***@git.example.com/repo.git');
    expect(JSON.stringify(w.cur.view.messages.slice(0, 3))).not.toContain('TOKEN123');
    // The memo's text is the body alone: the list is rebuilt on each update.
    expect(w.memo.summary?.text).toBe('SUMMARY of 8 messages');
  });

  it('keeps the file lists bounded across compactions: 5,000 files, the most recently touched kept', async () => {
    // 20 compactions of a growing session, each over 250 new files (125 read, 125 written) and one
    // file read in every round: the lists carried into each compaction (what it merges, redacts and
    // sorts) never pass the bound.
    const rounds = 20;
    const perRound = 125;
    let history: GuardMessage[] = [SYS, FIRST];
    let memo = emptyMemo();
    let carried: FileOps | undefined;
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < perRound; i++) {
        history.push(...toolStep(`r${round}_${i}`, { path: `src/r${round}/f${i}.ts` }, 'ok'));
        history.push(
          ...toolStep(`w${round}_${i}`, { path: `src/w${round}/f${i}.ts`, content: 'x' }, 'ok', 'write_file'),
        );
      }
      history.push(...toolStep(`hot${round}`, { path: 'src/hot.ts' }, 'ok'), ...chat(3, 4_000, `R${round}`).slice(2));
      history = [...history];
      let redacted = 0;
      const redact = (t: string) => {
        if (t.startsWith('src/')) redacted++;
        return t;
      };
      const { w } = await summarized(history, { memo, summaryApplies: memo.summary !== undefined, redact });
      expect(w.steps).toEqual(['summary']);
      memo = w.memo;
      carried = memo.summary?.fileOps;
      expect(carried?.read.length).toBeLessThanOrEqual(FILE_OPS_MAX_PER_LIST);
      expect(carried?.modified.length).toBeLessThanOrEqual(FILE_OPS_MAX_PER_LIST);
      // Only the new paths are redacted (the carried ones were, when they were new).
      expect(redacted).toBe(round === 0 ? 2 * perRound + 1 : 2 * perRound);
      // The footer shows at most its 50 per list, whatever the lists hold.
      const footer = w.stats.summary?.slice(w.stats.summary.indexOf('<files>')) ?? '';
      for (const line of footer.split('\n').slice(1, -1))
        expect(line.split(', ').length).toBeLessThanOrEqual(DEFAULT_FOOTER_MAX_PER_LIST);
    }
    expect(carried?.read).toHaveLength(FILE_OPS_MAX_PER_LIST);
    expect(carried?.modified).toHaveLength(FILE_OPS_MAX_PER_LIST);
    // The most recently touched: the file read in every round, and the newest rounds' files.
    expect(carried?.read).toContain('src/hot.ts');
    expect(carried?.read).not.toContain('src/r0/f0.ts');
    const newest = (kind: string) =>
      Array.from({ length: 4 }, (_, r) =>
        Array.from({ length: perRound }, (_, i) => `src/${kind}${r + 16}/f${i}.ts`),
      ).flat();
    expect(carried?.modified).toEqual(newest('w'));
    expect(carried?.read.filter((p) => p !== 'src/hot.ts')).toEqual(newest('r').slice(1));
  });

  it('writes no file list when file tracking is off', async () => {
    const messages = [SYS, FIRST, ...toolStep('r1', { path: 'a.ts' }, text('R1', 4_000)), ...chat(3).slice(2)];
    const { w } = await summarized(messages, { settings: { ...SETTINGS, fileOps: false } });
    expect(w.memo.summary).not.toHaveProperty('fileOps');
    expect(w.stats.summary?.startsWith('SUMMARY of 6 messages')).toBe(true);
    expect(w.stats.summary).not.toContain('<files>');
  });
});
