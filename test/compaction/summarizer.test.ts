// Unit tests of runSummarizer(): the fallbacks and what their digest keeps, the
// deadline of a whole compaction, the timer that must not let a process exit with a
// compaction pending, the chunking of the summarizer's input and the circuit breaker.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MECHANICAL_SUMMARY_PREFIX, MECHANICAL_USER_FLOOR_CHARS } from '../../src/compaction/mechanical.ts';
import { CircuitBreaker } from '../../src/compaction/circuit-breaker.ts';
import { runSummarizer, type SummarizeRequest, type SummarizerFailure } from '../../src/compaction/summarizer.ts';
import type { Summarizer, SummarizerInput } from '../../src/compaction/contract.ts';
import type { GuardMessage } from '../../src/messages.ts';
import { filler, turn } from './builders.ts';

/** The 17 messages at a 4k window: four turns and the latest request. */
const seventeen: GuardMessage[] = [0, 1, 2, 3]
  .flatMap((i) => turn(i, 150, 3000))
  .concat({ role: 'user', content: `request-4: ${filler(150)}` });

/** 400 user messages with a unique fact at their start, between assistant steps: 801 messages. */
function factSession(): GuardMessage[] {
  const out: GuardMessage[] = [{ role: 'assistant', content: 'Hello, what can I do?' }];
  for (let i = 0; i < 400; i++) {
    out.push({
      role: 'user',
      content: `fact-${i}: the deploy key of service ${i} lives in vault path kv/${i}. ${filler(250)}`,
    });
    out.push({ role: 'assistant', content: `Noted fact ${i}. ${filler(400)}` });
  }
  return out;
}

interface Recorded {
  failures: Array<{ reason: SummarizerFailure; consecutive: number }>;
}

/**
 * A request with a 4k window's settings: a 400-token summary budget, 0.375 tokens a character (the
 * default correction of 1.5 on chars/4), the summarizer's window the model's own.
 */
function request(over: Partial<SummarizeRequest> = {}): SummarizeRequest & Recorded {
  const failures: Recorded['failures'] = [];
  return {
    sessionId: 's',
    messages: seventeen,
    previousSummary: undefined,
    focus: undefined,
    maxSummaryTokens: 400,
    summarizerContextWindow: 4_000,
    timeoutMs: 60_000,
    tokensPerChar: 0.375,
    summarizer: undefined,
    breaker: new CircuitBreaker(3, 60_000),
    onFailure: (reason, consecutive) => failures.push({ reason, consecutive }),
    failures,
    ...over,
  };
}

/** What the fallback digest may take at a 4k window: 1.5 × the summary budget, in characters. */
const BUDGET_4K = (1.5 * 400) / 0.375;

afterEach(() => {
  vi.useRealTimers();
});

describe('runSummarizer: the length the summarizer is told', () => {
  // A summarizer that obeys the stated word budget to the word, with words of ordinary length (six
  // characters with their space, as in English prose and Markdown), must never be rejected as too
  // large: at the default correction (0.375 tokens a character) it was told 240 words and held to
  // 1,066 characters.
  it.each([0.25, 0.375, 0.5, 1])(
    'an answer of exactly the words asked for is accepted (%s tokens a character)',
    async (tokensPerChar) => {
      const obedient: Summarizer = ({ instructions }: SummarizerInput) => {
        const m = /at most ([\d,]+) words/.exec(instructions);
        if (!m) throw new Error('no word budget stated');
        const words = Number((m[1] as string).replaceAll(',', ''));
        return Array.from({ length: words }, (_, i) => (i % 2 ? 'state' : 'files')).join(' ');
      };
      const req = request({ summarizer: obedient, tokensPerChar });
      const outcome = await runSummarizer(req);
      expect(req.failures).toEqual([]);
      expect(outcome.mechanical).toBe(false);
    },
  );
});

describe('runSummarizer: the fallback digest keeps what the user said', () => {
  const hangs: Summarizer = () => new Promise<string>(() => {});
  it.each<[string, Summarizer | undefined, Partial<SummarizeRequest>, SummarizerFailure]>([
    ['no summarizer', undefined, {}, 'missing'],
    ['a summarizer that throws', () => Promise.reject(new Error('503')), {}, 'error'],
    ["a summarizer that returns ''", () => '', {}, 'empty'],
    ['a summarizer that returns 1 MB', () => 'x'.repeat(1_000_000), {}, 'too-large'],
    ['a summarizer that hangs', hangs, { timeoutMs: 20 }, 'timeout'],
  ])('with %s: every user request of 17 messages at a 4k window survives', async (_, summarizer, over, reason) => {
    const req = request({ summarizer, ...over });
    const outcome = await runSummarizer(req);
    expect(outcome.mechanical).toBe(true);
    expect(req.failures.map((f) => f.reason)).toEqual([reason]);
    expect(outcome.text.startsWith(MECHANICAL_SUMMARY_PREFIX)).toBe(true);
    expect(outcome.text.length).toBeLessThanOrEqual(BUDGET_4K);
    for (let i = 0; i <= 4; i++) expect(outcome.text).toContain(`- user: request-${i}: ${filler(150)}`);
    expect(outcome.lostUserMessages).toBe(0);
    // What went instead is the tool output (named only by count), and the digest says so.
    expect(outcome.text).not.toMatch(/- tool read_file returned: file/);
    expect(outcome.lostMessages).toBeGreaterThanOrEqual(4);
    expect(outcome.text).toMatch(/- \(\d+ tool and assistant steps left out to fit\)/);
  });

  it('reports the user messages a digest could not keep (801 messages at a 16k window)', async () => {
    // A 16k window: a 1,600-token summary budget and the room the pipeline leaves under the target.
    const req = request({
      messages: factSession(),
      maxSummaryTokens: 1600,
      summarizerContextWindow: 16_000,
      roomTokens: 3471,
    });
    const outcome = await runSummarizer(req);
    const kept = Array.from({ length: 400 }, (_, i) => i).filter((i) => outcome.text.includes(`- user: fact-${i}: `));
    expect(kept.length).toBeGreaterThan(100);
    expect(outcome.lostUserMessages).toBe(400 - kept.length);
    expect(outcome.lostMessages).toBeGreaterThanOrEqual(outcome.lostUserMessages);
    expect(outcome.text).toContain(`- (${400 - kept.length} earlier user messages could not be kept)`);
    expect(outcome.text.length).toBeLessThanOrEqual(3471 / 0.375);
  });

  it('keeps every user fact of 801 messages when the room allows their starts', async () => {
    const req = request({
      messages: factSession(),
      maxSummaryTokens: 1600,
      summarizerContextWindow: 16_000,
      roomTokens: 12_000,
    });
    const outcome = await runSummarizer(req);
    for (let i = 0; i < 400; i++) expect(outcome.text).toContain(`- user: fact-${i}: the deploy key of service ${i}`);
    expect(outcome.lostUserMessages).toBe(0);
  });

  it('keeps a previous summary longer than the summary budget whole when the room allows it', async () => {
    const previous = `## Task state\nMigrating the DB. ${filler(2_000)}\n## User guidance\nNever touch prod.`;
    // The summary budget is ~1,067 characters; the room under the target is 8,000.
    const outcome = await runSummarizer(request({ previousSummary: previous, roomTokens: 3_000 }));
    expect(outcome.text).toContain(previous);
    for (let i = 0; i <= 4; i++) expect(outcome.text).toContain(`- user: request-${i}: `);
  });

  it('bounds a previous summary far over the budget and still keeps the start of every user request', async () => {
    const previous = `## Task state\nMigrating the DB. ${filler(200_000)}\n## User guidance\nNever touch prod.`;
    const outcome = await runSummarizer(request({ previousSummary: previous }));
    expect(outcome.text.length).toBeLessThanOrEqual(BUDGET_4K);
    expect(outcome.text).toContain('## Task state\nMigrating the DB.');
    expect(outcome.text).toContain('Never touch prod.');
    for (let i = 0; i <= 4; i++)
      expect(outcome.text).toContain(`- user: request-${i}: ${filler(150).slice(0, MECHANICAL_USER_FLOOR_CHARS - 12)}`);
  });

  it('keeps the start of every user request when the room under the target is tiny or negative', async () => {
    for (const roomTokens of [0, 1, -5_000, Number.NaN]) {
      const outcome = await runSummarizer(request({ roomTokens }));
      expect(outcome.text.length).toBeLessThanOrEqual(BUDGET_4K);
      for (let i = 0; i <= 4; i++) expect(outcome.text).toContain(`- user: request-${i}: `);
    }
  });

  it('a chain of fallbacks does not nest digests or lose the user lines of the earlier ones', async () => {
    const first = await runSummarizer(request({ messages: seventeen.slice(0, 8) }));
    const second = await runSummarizer(request({ messages: seventeen.slice(8), previousSummary: first.text }));
    expect(second.text.split(MECHANICAL_SUMMARY_PREFIX)).toHaveLength(2);
    expect(second.text.length).toBeLessThanOrEqual(BUDGET_4K);
    for (let i = 0; i <= 4; i++) expect(second.text).toContain(`- user: request-${i}: `);
  });
});

describe('runSummarizer: the deadline of a whole compaction', () => {
  /**
   * A summarizer window so small that 601 messages take dozens of chunks (even cut to what the
   * summarizer reads of them: 4 × the summary budget, at least 40 characters each).
   */
  const many = Array.from(
    { length: 601 },
    (_, i): GuardMessage => ({ role: i % 2 ? 'assistant' : 'user', content: `m${i} ${filler(400)}` }),
  );

  function slow(ms: number) {
    const calls: SummarizerInput[] = [];
    const summarizer: Summarizer = (input) => {
      calls.push(input);
      return new Promise((resolve) => setTimeout(() => resolve(`summary after ${calls.length} calls`), ms));
    };
    return { calls, summarizer };
  }

  it('stops calling a slow summarizer at the deadline and folds the rest mechanically', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { calls, summarizer } = slow(150);
    const req = request({
      messages: many,
      summarizer,
      summarizerContextWindow: 2_000,
      maxSummaryTokens: 800,
      deadline: Date.now() + 1_000,
    });
    const pending = runSummarizer(req);
    await vi.advanceTimersByTimeAsync(60_000);
    const outcome = await pending;
    // Without the deadline this takes dozens of calls; 150 ms each fit 7 in a second (the 7th cut short).
    expect(calls.length).toBe(7);
    expect(outcome.calls).toBe(7);
    expect(outcome.mechanical).toBe(true);
    expect(req.failures.map((f) => f.reason)).toEqual(['deadline']);
    // The summary so far is kept on top of the digest of the rest.
    expect(outcome.text).toContain('summary after 6 calls');
    expect(outcome.text).toContain('- user: m600 ');
    // Running out of time says nothing about the summarizer's health.
    expect(req.breaker.consecutiveFailures).toBe(0);
  });

  it('without a deadline the same summarizer is called for every chunk', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { calls, summarizer } = slow(150);
    const req = request({ messages: many, summarizer, summarizerContextWindow: 2_000, maxSummaryTokens: 800 });
    const pending = runSummarizer(req);
    await vi.advanceTimersByTimeAsync(60_000);
    const outcome = await pending;
    expect(outcome.mechanical).toBe(false);
    expect(calls.length).toBeGreaterThan(20);
  });

  it('does not call the summarizer when the deadline has passed', async () => {
    const { calls, summarizer } = slow(1);
    const req = request({ summarizer, deadline: Date.now() - 1 });
    const outcome = await runSummarizer(req);
    expect(calls).toHaveLength(0);
    expect(outcome.mechanical).toBe(true);
    expect(req.failures.map((f) => f.reason)).toEqual(['deadline']);
    for (let i = 0; i <= 4; i++) expect(outcome.text).toContain(`- user: request-${i}: `);
  });

  it('a call cut short by the deadline is a deadline, not a timeout; the call is aborted', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    let signal: AbortSignal | undefined;
    const req = request({
      summarizer: (input) => {
        signal = input.signal;
        return new Promise<string>(() => {});
      },
      timeoutMs: 60_000,
      deadline: Date.now() + 500,
    });
    const pending = runSummarizer(req);
    await vi.advanceTimersByTimeAsync(500);
    const outcome = await pending;
    expect(outcome.mechanical).toBe(true);
    expect(signal?.aborted).toBe(true);
    expect(req.failures.map((f) => f.reason)).toEqual(['deadline']);
    expect(req.breaker.consecutiveFailures).toBe(0);
  });

  it('a call that times out before the deadline is still a timeout and counts against the summarizer', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const req = request({
      summarizer: () => new Promise<string>(() => {}),
      timeoutMs: 100,
      deadline: Date.now() + 10_000,
    });
    const pending = runSummarizer(req);
    await vi.advanceTimersByTimeAsync(100);
    await pending;
    expect(req.failures.map((f) => f.reason)).toEqual(['timeout']);
    expect(req.breaker.consecutiveFailures).toBe(1);
  });

  it('ignores a deadline that is not a finite time', async () => {
    const req = request({ summarizer: () => 'the summary', deadline: Number.NaN });
    const outcome = await runSummarizer(req);
    expect(outcome).toMatchObject({ text: 'the summary', mechanical: false });
    expect(req.failures).toEqual([]);
  });

  it('a timeout beyond what a timer can hold does not fire at once', async () => {
    const summarizer = () => new Promise<string>((resolve) => setTimeout(() => resolve('the summary'), 20));
    const req = request({ summarizer, timeoutMs: 2 ** 40 });
    const outcome = await runSummarizer(req);
    expect(outcome).toMatchObject({ text: 'the summary', mechanical: false });
  });
});

describe('runSummarizer: chunks of the summarizer input', () => {
  function recording() {
    const calls: SummarizerInput[] = [];
    const summarizer: Summarizer = (input) => {
      calls.push(input);
      return `summary ${calls.length}`;
    };
    return { calls, summarizer };
  }

  it('every user message reaches the summarizer, in order, across many chunks', async () => {
    const { calls, summarizer } = recording();
    const messages = factSession();
    const outcome = await runSummarizer(
      request({ messages, summarizer, summarizerContextWindow: 8_000, maxSummaryTokens: 800 }),
    );
    expect(outcome.mechanical).toBe(false);
    expect(calls.length).toBeGreaterThan(5);
    const prompts = calls.map((c) => c.prompt).join('\n');
    let at = 0;
    for (let i = 0; i < 400; i++) {
      const found = prompts.indexOf(`fact-${i}: `, at);
      expect(found, `fact-${i}`).toBeGreaterThanOrEqual(0);
      at = found;
    }
  });

  it('a user message larger than a chunk reaches the summarizer with its start and its end', async () => {
    const { calls, summarizer } = recording();
    const huge = `START OF THE REQUEST: keep the API stable. ${filler(100_000)} END OF THE REQUEST: ship on Friday.`;
    const messages: GuardMessage[] = [
      { role: 'user', content: 'first' },
      { role: 'user', content: huge },
      { role: 'assistant', content: 'ok' },
    ];
    const outcome = await runSummarizer(
      request({ messages, summarizer, summarizerContextWindow: 8_000, maxSummaryTokens: 800 }),
    );
    expect(outcome.mechanical).toBe(false);
    const prompts = calls.map((c) => c.prompt);
    expect(prompts.some((p) => p.includes('START OF THE REQUEST: keep the API stable.'))).toBe(true);
    expect(prompts.some((p) => p.includes('END OF THE REQUEST: ship on Friday.'))).toBe(true);
    // Each call fits 80% of the summarizer's window.
    for (const c of calls) expect((c.instructions.length + c.prompt.length) * 0.375).toBeLessThanOrEqual(0.8 * 8_000);
  });

  it('a user message of 20,000 small text parts is cut to fit a chunk, its start and end kept', async () => {
    const { calls, summarizer } = recording();
    const parts = Array.from({ length: 20_000 }, (_, i) => ({
      type: 'text' as const,
      text: `log line ${i} of the pasted build output`,
    }));
    const messages: GuardMessage[] = [
      { role: 'user', content: 'first' },
      { role: 'user', content: parts },
      { role: 'assistant', content: 'ok' },
    ];
    const outcome = await runSummarizer(
      request({ messages, summarizer, summarizerContextWindow: 8_000, maxSummaryTokens: 800 }),
    );
    expect(outcome.mechanical).toBe(false);
    for (const c of calls) expect((c.instructions.length + c.prompt.length) * 0.375).toBeLessThanOrEqual(0.8 * 8_000);
    const prompts = calls.map((c) => c.prompt).join('\n');
    expect(prompts).toContain('log line 0 of the pasted build output');
    expect(prompts).toContain('log line 19999 of the pasted build output');
  });

  it('a summarizer failing at a later chunk keeps the summary so far and digests only the rest', async () => {
    let n = 0;
    const summarizer: Summarizer = () => {
      n++;
      if (n === 3) throw new Error('503');
      return `summary of chunk ${n}`;
    };
    const messages = factSession();
    const req = request({
      messages,
      summarizer,
      summarizerContextWindow: 8_000,
      maxSummaryTokens: 800,
      roomTokens: 20_000,
    });
    const outcome = await runSummarizer(req);
    expect(outcome.mechanical).toBe(true);
    expect(outcome.text).toContain('summary of chunk 2');
    expect(req.failures.map((f) => f.reason)).toEqual(['error']);
    // The two chunks summarized are not in the digest; the user messages after them all are.
    expect(outcome.text).not.toContain('- user: fact-0: ');
    expect(outcome.text).toContain('- user: fact-399: ');
    expect(outcome.lostUserMessages).toBe(0);
  });
});

describe('CircuitBreaker', () => {
  it('opens after the configured consecutive failures, for the cooldown, then lets one trial through', () => {
    const b = new CircuitBreaker(2, 1_000);
    expect(b.allows(0)).toBe(true);
    b.failure(0);
    expect(b.allows(0)).toBe(true);
    b.failure(10);
    expect(b.consecutiveFailures).toBe(2);
    expect(b.allows(500)).toBe(false);
    expect(b.allows(1_010)).toBe(true);
    // The trial fails: closed again for a full cooldown.
    b.failure(1_010);
    expect(b.allows(1_500)).toBe(false);
    expect(b.allows(2_010)).toBe(true);
  });

  it('closes on a success', () => {
    const b = new CircuitBreaker(1, 1_000);
    b.failure(0);
    expect(b.allows(1)).toBe(false);
    b.success();
    expect(b.consecutiveFailures).toBe(0);
    expect(b.allows(1)).toBe(true);
  });

  it('an open breaker skips the summarizer, with reason circuit-open', async () => {
    const breaker = new CircuitBreaker(1, 60_000);
    breaker.failure(Date.now());
    let called = false;
    const req = request({
      breaker,
      summarizer: () => {
        called = true;
        return 'x';
      },
    });
    const outcome = await runSummarizer(req);
    expect(called).toBe(false);
    expect(outcome.mechanical).toBe(true);
    expect(req.failures.map((f) => f.reason)).toEqual(['circuit-open']);
  });
});

describe('runSummarizer: the summarizer timer', () => {
  it('keeps a short-lived process alive until a hanging summarizer times out, so beforeModel settles', () => {
    const index = fileURLToPath(new URL('../../src/index.ts', import.meta.url));
    const script = `
      import { createContextGuard } from ${JSON.stringify(index)};
      const guard = createContextGuard({ contextWindow: 4000, summarizerTimeoutMs: 200, summarizer: () => new Promise(() => {}) });
      const messages = [];
      for (let i = 0; i < 12; i++) {
        messages.push({ role: 'user', content: 'request ' + i + ' ' + 'lorem ipsum '.repeat(60) });
        messages.push({ role: 'assistant', content: 'answer ' + i + ' ' + 'dolor sit '.repeat(60) });
      }
      messages.push({ role: 'user', content: 'the latest request' });
      const r = await guard.beforeModel({ sessionId: 's', messages });
      console.log('settled', r.compaction?.steps.includes('mechanical') ? 'mechanical' : r.compaction?.strategy);
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
    });
    expect(child.stdout.trim(), child.stderr).toBe('settled mechanical');
    expect(child.status, child.stderr).toBe(0);
  });
});

describe('runSummarizer: the fallback digest reads the messages as the host wrote them', () => {
  it('a user message clipped to fit a summarizer chunk keeps, in the digest, the words after a long base64 run', async () => {
    const blob = Buffer.alloc(6_000, 'x').toString('base64');
    const words = 'then the words that matter: ship it on Friday';
    const big: GuardMessage = { role: 'user', content: `U1 ${blob} ${words} ${blob}` };
    const outcome = await runSummarizer(
      request({
        messages: [big, { role: 'assistant', content: 'ok' }],
        summarizer: () => {
          throw new Error('down');
        },
      }),
    );
    expect(outcome.mechanical).toBe(true);
    expect(outcome.text).toContain(words);
  });
});

describe('runSummarizer: what the summarizer reads, and what the digest keeps once', () => {
  it('reads at most 4 × the summary budget: tool output cut first, the user words whole', async () => {
    const prompts: string[] = [];
    const summarizer: Summarizer = (input) => {
      prompts.push(input.instructions + input.prompt);
      return 'ok';
    };
    // 8 turns of a 150-character request and a 3,000-character file: about 30,000 characters.
    const messages = [0, 1, 2, 3, 4, 5, 6, 7].flatMap((i) => turn(i, 150, 3000));
    const outcome = await runSummarizer(
      request({ messages, summarizer, maxSummaryTokens: 800, summarizerContextWindow: 32_000 }),
    );
    expect(outcome.mechanical).toBe(false);
    expect(prompts).toHaveLength(1);
    // 4 × 800 tokens at 0.375 tokens a character, plus the instructions and the framing.
    const transcript = prompts[0] as string;
    expect(transcript.length).toBeLessThan((4 * 800) / 0.375 + 3_000);
    for (let i = 0; i < 8; i++) expect(transcript).toContain(`request-${i}: ${filler(150)}`);
    expect(transcript).toContain('characters omitted');
  });

  it('reads as much as readTokens (the summarizerInputTokens option) allows: a larger bound reads every file whole', async () => {
    const prompts: string[] = [];
    const summarizer: Summarizer = (input) => {
      prompts.push(input.prompt);
      return 'ok';
    };
    // Files under the transcript's own 2,000-character cut of each tool output.
    const messages = [0, 1, 2, 3, 4, 5, 6, 7].flatMap((i) => turn(i, 150, 1500));
    await runSummarizer(
      request({ messages, summarizer, maxSummaryTokens: 800, readTokens: 20_000, summarizerContextWindow: 64_000 }),
    );
    expect(prompts).toHaveLength(1);
    expect(prompts[0]).not.toContain('characters omitted');
    prompts.length = 0;
    await runSummarizer(
      request({ messages, summarizer, maxSummaryTokens: 800, readTokens: 1_000, summarizerContextWindow: 64_000 }),
    );
    expect((prompts[0] as string).length).toBeLessThan(1_000 / 0.375 + 2_000);
    for (let i = 0; i < 8; i++) expect(prompts[0]).toContain(`request-${i}: `);
  });

  it('leaves a message the summarizer reads only for context (the latest request, sent whole) out of the digest', async () => {
    const latest = seventeen[16] as GuardMessage;
    const outcome = await runSummarizer(request({ contextOnly: new Set([latest]), roomTokens: 3_000 }));
    expect(outcome.mechanical).toBe(true);
    for (let i = 0; i <= 3; i++) expect(outcome.text).toContain(`- user: request-${i}: `);
    expect(outcome.text).not.toContain('- user: request-4: ');
  });

  it('keeps the start of every user message it replaces now when a long previous summary takes the room', async () => {
    // A model-written summary (kept whole while it fits beside the users' starts) far longer than the room.
    // Short messages: growing by what their lines take is not enough once the summary keeps its half.
    const previousSummary = `## Task state\n${filler(6_000)}`;
    const next = Array.from(
      { length: 40 },
      (_, i): GuardMessage => ({ role: 'user', content: `new-${i}: ${filler(40)}` }),
    );
    const outcome = await runSummarizer(
      request({ messages: next, previousSummary, maxSummaryTokens: 400, roomTokens: 200, userRoomTokens: 6_000 }),
    );
    expect(outcome.mechanical).toBe(true);
    for (let i = 0; i < 40; i++) expect(outcome.text).toContain(`- user: new-${i}: ${filler(40)}`);
    expect(outcome.lostUserMessages).toBe(0);
  });

  it('grows past its room only for the user messages it replaces now: older digest lines give way', async () => {
    // A first digest with room for the starts of 400 user messages; the next one has little room.
    const first = await runSummarizer(request({ messages: factSession(), maxSummaryTokens: 1600, roomTokens: 12_000 }));
    expect(first.lostUserMessages).toBe(0);
    const next = [0, 1, 2, 3].map((i): GuardMessage => ({ role: 'user', content: `new-${i}: ${filler(150)}` }));
    const second = await runSummarizer(
      request({
        messages: next,
        previousSummary: first.text,
        maxSummaryTokens: 1600,
        roomTokens: 1_000,
        userRoomTokens: 12_000,
      }),
    );
    const start = filler(150).slice(0, MECHANICAL_USER_FLOOR_CHARS - 12);
    for (let i = 0; i <= 3; i++) expect(second.text).toContain(`- user: new-${i}: ${start}`);
    expect(second.lostUserMessages).toBeGreaterThan(0);
    expect(second.text).toMatch(/- \(\d+ earlier user messages could not be kept\)/);
    // Far under the room up to the threshold: the digest does not grow with every compaction.
    expect(second.text.length).toBeLessThan(6_000 / 0.375);
  });
});
