// Feature tests of the compaction pipeline (issue 3), through the public API only: the fallback
// paths, the circuit breaker, split turns, both retention modes, pruning, the memo, single flight,
// hooks, manual compaction, bounded summarizer input, summary updates, the file list, the
// calibration reset, and the new options' validation.
//
// Sizes: most tests use a 20k window (threshold 16k, target 10k, tail 4k, summary budget 2k) and
// no usage feedback, so the estimate is chars/4 × 1.5: 6 exchanges of 4,000 characters are ~18k.
import { describe, expect, it } from 'vitest';
import {
  ContextGuardConfigError,
  createContextGuard,
  type ContextGuardOptions,
  type GuardMessage,
} from '../../src/index.ts';
import { assistant, recorder, system, toolStep, user } from '../helpers.ts';
import {
  FIRST_REQUEST,
  SUMMARY_PREFIX,
  SYSTEM,
  chat,
  contentText,
  grow,
  isSummary,
  keptTail,
  realTokens,
  recordingSummarizer,
  sleep,
  summaryIndex,
  summaryOf,
  text,
} from './builders.ts';
import { expectInvariants, pairingProblems, userText } from './invariants.ts';

const WINDOW = 20_000;
const LATEST = 'Latest request: finish the migration and run the test suite.';
/**
 * A summarizer window that takes a whole compaction in one call. With the default (the model's own
 * 20k window) the ~12k tokens summarized here legitimately go in two chunks.
 */
const ONE_CHUNK = 200_000;
/** A 1×1 PNG header: an image with known dimensions. */
const PNG = Uint8Array.from([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
  0, 0,
]);

/** A guard on the standard 20k window that records its events. */
function setup(options: ContextGuardOptions = {}) {
  const ev = recorder();
  const guard = createContextGuard({ contextWindow: WINDOW, onEvent: ev.onEvent, ...options });
  return { guard, ev };
}

/** The tool-result parts of `messages`, in order. */
function toolResults(messages: readonly GuardMessage[]) {
  return messages.flatMap((m) => (m.role === 'tool' ? m.content.filter((p) => p.type === 'tool-result') : []));
}

function outputValue(part: { output: unknown }): string {
  const out = part.output as { type: string; value: unknown };
  return typeof out.value === 'string' ? out.value : JSON.stringify(out.value);
}

describe('summarizer answers and fallbacks', () => {
  it('accepts a { text } answer, as an AI SDK generateText result', async () => {
    const { guard } = setup({
      summarizer: () => ({ text: '## Task state\nfrom an object', usage: { outputTokens: 5 } }) as { text: string },
    });
    const r = await guard.beforeModel({ sessionId: 's', messages: chat(6, 4_000).messages });
    expect(r.compaction?.strategy).toBe('summary');
    expect(summaryOf(r.messages)).toContain('from an object');
  });

  /** Runs the standard over-threshold chat and checks the mechanical fallback kept the history. */
  async function expectMechanical(options: ContextGuardOptions, reason: string) {
    const { guard, ev } = setup(options);
    const { messages } = chat(6, 4_000, LATEST);
    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(r.compaction?.strategy).toBe('mechanical');
    const failed = ev.of('summarizer-failed');
    expect(failed.map((e) => e.reason)).toEqual([reason]);
    // A missing summarizer is a configuration, not a failure the breaker counts.
    if (reason !== 'missing') expect(failed[0]?.consecutiveFailures).toBe(1);
    const summary = summaryOf(r.messages);
    expect(summary).toContain('[Mechanical digest:');
    // The early messages are still there, by their first characters.
    expect(summary).toContain('A1 lorem ipsum');
    expect(summary).toContain('U1 lorem ipsum');
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
    expectInvariants(messages, r);
    expect(ev.of('error')).toEqual([]);
    return { r, ev };
  }

  it('falls back when the summarizer throws', async () => {
    const { r, ev } = await expectMechanical(
      {
        summarizer: () => {
          throw new Error('rate limited');
        },
      },
      'error',
    );
    expect(ev.last('summarizer-failed').error).toBeInstanceOf(Error);
    expect(r.compaction?.summarizerCalls).toBe(1);
  });

  it('falls back when the summarizer rejects', async () => {
    await expectMechanical({ summarizer: async () => Promise.reject(new Error('503')) }, 'error');
  });

  it('falls back on timeout and aborts the summarizer’s signal', async () => {
    const signals: AbortSignal[] = [];
    await expectMechanical(
      {
        summarizerTimeoutMs: 50,
        // A well-behaved summarizer: it ends when its signal fires.
        summarizer: ({ signal }) =>
          new Promise((_resolve, reject) => {
            signals.push(signal);
            signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
          }),
      },
      'timeout',
    );
    expect(signals).toHaveLength(1);
    expect(signals[0]?.aborted).toBe(true);
  });

  it('does not wait for a summarizer that ignores its signal', async () => {
    const started = Date.now();
    await expectMechanical({ summarizerTimeoutMs: 50, summarizer: () => new Promise<string>(() => {}) }, 'timeout');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it.each([
    ['an empty string', ''],
    ['whitespace', '  \n\t '],
    ['an empty { text }', { text: '' }],
  ])('falls back when the summarizer returns %s', async (_name, answer) => {
    await expectMechanical({ summarizer: () => answer }, 'empty');
  });

  it('falls back when the summary is larger than maxSummaryTokens', async () => {
    // 40,000 characters are ~10,000 tokens against the default budget of half the 4k buffer.
    await expectMechanical({ summarizer: () => 'word '.repeat(8_000) }, 'too-large');
  });

  it('falls back when the summary is larger than an explicit maxSummaryTokens', async () => {
    const { guard, ev } = setup({ maxSummaryTokens: 300, summarizer: () => 'word '.repeat(1_000) });
    const r = await guard.beforeModel({ sessionId: 's', messages: chat(6, 4_000).messages });
    expect(r.compaction?.strategy).toBe('mechanical');
    expect(ev.last('summarizer-failed').reason).toBe('too-large');
    expect(summaryOf(r.messages)).not.toContain('word word word');
  });

  it('uses the mechanical digest when no summarizer is configured', async () => {
    await expectMechanical({}, 'missing');
  });
});

describe('circuit breaker', () => {
  it('skips the summarizer after N consecutive failures until the cooldown has passed', async () => {
    let calls = 0;
    const { guard, ev } = setup({
      circuitBreaker: { failures: 2, cooldownMs: 200 },
      summarizerContextWindow: ONE_CHUNK,
      summarizer: () => {
        calls++;
        throw new Error('provider down');
      },
    });
    // A stateless host whose history grows past the threshold again before each call.
    let history = chat(6, 4_000).messages;
    const call = async () => {
      const before = ev.events.length;
      const r = await guard.beforeModel({ sessionId: 's', messages: history });
      expect(r.compaction?.strategy).toBe('mechanical');
      expectInvariants(history, r);
      return ev.events.slice(before).filter((e) => e.type === 'summarizer-failed');
    };

    expect(await call()).toMatchObject([{ reason: 'error', consecutiveFailures: 1 }]);
    history = grow(history, 'B', 6, 4_000);
    expect(await call()).toMatchObject([{ reason: 'error', consecutiveFailures: 2 }]);
    expect(calls).toBe(2);

    // Open: the summarizer is not called at all.
    history = grow(history, 'C', 6, 4_000);
    expect(await call()).toMatchObject([{ reason: 'circuit-open' }]);
    expect(calls).toBe(2);

    // After the cooldown it is tried again.
    await sleep(250);
    history = grow(history, 'D', 6, 4_000);
    await call();
    expect(calls).toBe(3);
  });

  it('closes again after a success', async () => {
    let calls = 0;
    const { guard, ev } = setup({
      circuitBreaker: { failures: 2, cooldownMs: 60_000 },
      summarizerContextWindow: ONE_CHUNK,
      // fail, succeed, fail, fail: never two failures in a row until the end
      summarizer: () => {
        calls++;
        if (calls === 2) return '## Task state\nrecovered';
        throw new Error('flaky');
      },
    });
    let history = chat(6, 4_000).messages;
    for (const prefix of ['B', 'C', 'D', 'E']) {
      await guard.beforeModel({ sessionId: 's', messages: history });
      history = grow(history, prefix, 6, 4_000);
    }
    // Calls 1 (fail), 2 (ok: resets the count), 3 (fail), 4 (fail): all four reached the summarizer.
    expect(calls).toBe(4);
    const failures = ev.of('summarizer-failed').filter((e) => e.reason !== 'circuit-open');
    expect(failures.map((e) => e.consecutiveFailures)).toEqual([1, 1, 2]);
    await guard.beforeModel({ sessionId: 's', messages: history });
    expect(calls).toBe(4);
    expect(ev.last('summarizer-failed').reason).toBe('circuit-open');
  });
});

describe('split turn', () => {
  const request = 'Refactor the payment module and run the tests after each change.';

  /** `before`, then the request followed by 16 tool steps of ~3,000 characters: one turn over the tail budget. */
  function bigTurn(before: GuardMessage[]): GuardMessage[] {
    const messages = [...before, user(request)];
    for (let i = 0; i < 16; i++)
      messages.push(...toolStep(`call-${i}`, { cmd: `step ${i}` }, text(`R${i}`, 3_000), 'bash'));
    return messages;
  }

  it('summarizes the beginning of a turn larger than the tail budget and keeps its end', async () => {
    const messages = bigTurn([
      SYSTEM,
      user(FIRST_REQUEST),
      assistant('Sure, on it.'),
      user('Use the staging database.'),
      assistant('Noted.'),
    ]);
    const { summarizer, calls } = recordingSummarizer();
    const { guard } = setup({ summarizer, prune: false, summarizerContextWindow: ONE_CHUNK });

    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(r.compaction?.splitTurn).toBe(true);
    expect(calls.length).toBeGreaterThanOrEqual(1);
    const tail = keptTail(messages, r.messages);
    expect(tail.length).toBeGreaterThan(0);
    expect(tail[0]?.role).toBe('assistant');
    expect(tail.at(-1)).toBe(messages.at(-1));
    // Between the summary and the kept tail: a continuation that quotes the request.
    const s = summaryIndex(r.messages);
    const between = r.messages.slice(s + 1, r.messages.length - tail.length);
    expect(between.some((m) => m.role === 'user' && !isSummary(m) && userText(m).includes(request))).toBe(true);
    // The turn's beginning went to the summarizer: the earliest steps and the request itself.
    const prompts = calls.map((c) => c.prompt).join('\n');
    expect(prompts).toContain('R0 lorem');
    // The user's earlier words are carried over verbatim before the summary (keepUserMessagesTokens), not summarized.
    const carried = r.messages
      .slice(0, s)
      .filter((m) => m.role === 'user' && !isSummary(m))
      .map(userText);
    expect(carried).toContain('Use the staging database.');
    expect(prompts).not.toContain('Use the staging database.');
    expect(pairingProblems(r.messages)).toEqual([]);
    expectInvariants(messages, r);
  });

  it('when the turn is the whole conversation, its request stays in the prompt', async () => {
    const messages = bigTurn([SYSTEM]);
    const { guard } = setup({ summarizer: () => 'S', prune: false });

    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(r.compaction?.splitTurn).toBe(true);
    const tail = keptTail(messages, r.messages);
    expect(tail[0]?.role).toBe('assistant');
    const head = r.messages.slice(0, r.messages.length - tail.length);
    expect(head.some((m) => m.role === 'user' && !isSummary(m) && userText(m).includes(request))).toBe(true);
    expect(pairingProblems(r.messages)).toEqual([]);
    expectInvariants(messages, r);
  });
});

describe('retention modes', () => {
  it('summarize-all: the request becomes exactly [system..., summary, request, continuation note]', async () => {
    const { summarizer } = recordingSummarizer(() => 'SUMMARY-ALL text');
    const { guard } = setup({ summarizer, retention: 'summarize-all' });
    const systems = [SYSTEM, system('Answer in English.')];
    const messages = [...systems, ...chat(6, 4_000, LATEST).messages.slice(1)];

    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(r.messages).toHaveLength(5);
    expect(r.messages.slice(0, 2)).toEqual(systems);
    expect(isSummary(r.messages[2] as GuardMessage)).toBe(true);
    expect(summaryOf(r.messages)).toContain('SUMMARY-ALL text');
    // The request itself, whole, never quoted or cut by the summary.
    expect(r.messages[3]).toBe(messages[messages.length - 1]);
    const note = r.messages[4] as GuardMessage;
    expect(note.role).toBe('user');
    expect(isSummary(note)).toBe(false);
    expect(userText(note)).toMatch(/^\[Continue\]/);
    expect(r.compaction).toMatchObject({ strategy: 'summary', messagesBefore: messages.length, messagesAfter: 5 });
    expectInvariants(messages, r);
  });

  it('summarize-all: the latest request keeps its image', async () => {
    // The continuation quotes the request; an image in it must still reach the model, or the
    // user's "what is wrong in this screenshot?" loses the screenshot.
    const { guard } = setup({ summarizer: () => 'S', retention: 'summarize-all' });
    const image = { type: 'image' as const, image: PNG, mediaType: 'image/png' };
    const latest: GuardMessage = {
      role: 'user',
      content: [{ type: 'text', text: 'What is wrong in this screenshot?' }, image],
    };
    const messages = [...chat(6, 4_000).messages, latest];

    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(r.compaction).toBeDefined();
    const images = r.messages.flatMap((m) =>
      m.role === 'user' && Array.isArray(m.content) ? m.content.filter((p) => p.type === 'image') : [],
    );
    expect(images).toContainEqual(image);
    expectInvariants(messages, r);
  });

  it('keep-recent: keeps the system message, the first request and a recent tail verbatim (same objects)', async () => {
    const { summarizer } = recordingSummarizer();
    // Without the carry-over of recent user messages (tested in archive tests), all else is summarized.
    const { guard } = setup({ summarizer, keepUserMessagesTokens: 0 });
    const { messages, first } = chat(6, 4_000, LATEST);

    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(r.compaction?.strategy).toBe('summary');
    expect(r.messages[0]).toBe(SYSTEM);
    expect(r.messages).toContain(first);
    const tail = keptTail(messages, r.messages);
    expect(tail.length).toBeGreaterThan(0);
    expect(tail.at(-1)?.role).toBe('user');
    expect(userText(tail.at(-1) as GuardMessage)).toBe(LATEST);
    // Nothing lost or duplicated: every input message is kept or summarized.
    expect(r.compaction?.summarizedMessages).toBe(messages.length - 2 - tail.length);
    expect(r.messages.filter(isSummary)).toHaveLength(1);
    expectInvariants(messages, r);
  });

  it('keep-recent with keepFirstUserMessage: false summarizes the first request too', async () => {
    const { summarizer, calls } = recordingSummarizer();
    const { guard } = setup({ summarizer, keepFirstUserMessage: false });
    const { messages, first } = chat(6, 4_000, LATEST);
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.messages).not.toContain(first);
    expect(calls[0]?.messages).toContain(first);
    expectInvariants(messages, r);
  });
});

describe('prune first', () => {
  /** Old tool outputs make the bulk: 12 results of 4,000 characters (~18k tokens in all). */
  function toolHeavy() {
    const messages: GuardMessage[] = [SYSTEM, user('Audit the logs of every service.')];
    for (let i = 0; i < 12; i++) {
      messages.push(
        ...toolStep(`c${i}`, { path: `logs/s${i}.log` }, text(`LOG${i}`, 4_000), i === 2 ? 'memory' : 'read_log'),
      );
    }
    messages.push(assistant('All logs read.'), user('Now write the report.'));
    return messages;
  }

  it('replaces old tool results by placeholders without calling the summarizer', async () => {
    const { summarizer, calls } = recordingSummarizer();
    // Half the window as the target, which placeholders alone reach.
    const { guard } = setup({ summarizer, target: 0.5, prune: { neverPrune: ['memory'] } });
    const messages = toolHeavy();

    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(r.compaction).toMatchObject({ strategy: 'prune', steps: ['prune'], summarizerCalls: 0 });
    expect(calls).toHaveLength(0);
    expect(r.messages).toHaveLength(messages.length);

    const before = toolResults(messages);
    const after = toolResults(r.messages);
    const pruned = after.map((p, i) => outputValue(p) !== outputValue(before[i] as { output: unknown }));
    expect(r.compaction?.prunedToolResults).toBe(pruned.filter(Boolean).length);
    expect(pruned.filter(Boolean).length).toBeGreaterThan(0);
    after.forEach((p, i) => {
      const original = before[i]!;
      expect(p.toolCallId).toBe(original.toolCallId);
      expect(p.toolName).toBe(original.toolName);
      if (!pruned[i]) return;
      // A placeholder: short, says what was removed and that the tool can be run again.
      expect(p.output.type).toBe('text');
      const value = outputValue(p);
      expect(value.length).toBeLessThan(400);
      expect(value).toMatch(/again/i);
    });
    // neverPrune: the memory result is untouched.
    expect(pruned[2]).toBe(false);
    // The protected recent tail: the latest result is untouched, and every pruned result is older
    // than every kept one (the memory one aside).
    expect(pruned.at(-1)).toBe(false);
    const prunable = pruned.filter((_p, i) => i !== 2);
    const firstKept = prunable.indexOf(false);
    expect(prunable.slice(firstKept).every((p) => !p)).toBe(true);
    expectInvariants(messages, r);
  });

  it('prunes in one batch: neither a replay nor the next step compacts again', async () => {
    const { guard } = setup({ target: 0.5, prune: { neverPrune: ['memory'] } });
    const messages = toolHeavy();
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction?.strategy).toBe('prune');
    // A stateless host replays the same history.
    const replay = await guard.beforeModel({ sessionId: 's', messages });
    expect(replay.compaction).toBeUndefined();
    expect(replay.messages).toEqual(r.messages);
    // A stateful host sends what it got plus the next step.
    const next = [
      ...r.messages,
      ...toolStep('c-next', { path: 'logs/next.log' }, text('LOG-next', 1_000), 'read_log'),
      user('And the summary table.'),
    ];
    const r2 = await guard.beforeModel({ sessionId: 's', messages: next });
    expect(r2.compaction).toBeUndefined();
  });

  it('truncates an oversized tool result, keeping its head and tail with a marker', async () => {
    const { guard } = setup();
    const huge = `${text('HEAD-START', 100_000)} TAIL-END`;
    const messages: GuardMessage[] = [SYSTEM, user('Read the dump.'), ...toolStep('d1', { path: 'dump.txt' }, huge)];

    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(r.compaction?.truncatedToolResults).toBe(1);
    expect(r.compaction?.steps).toContain('prune');
    const [part] = toolResults(r.messages);
    expect(part?.toolCallId).toBe('d1');
    expect(part?.toolName).toBe('read_file');
    const value = outputValue(part!);
    expect(value.startsWith('HEAD-START')).toBe(true);
    expect(value.endsWith('TAIL-END')).toBe(true);
    expect(value).toMatch(/\d[\d,]* characters omitted; archived whole: recall id "d1"/);
    expect(value.length).toBeLessThan(huge.length / 4);
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
    expectInvariants(messages, r);
  });
});

describe('memo', () => {
  it('a stateless host replaying its history over 30 calls gets one summarizer call and a byte-stable prefix', async () => {
    const { summarizer, calls } = recordingSummarizer();
    const { guard } = setup({ summarizer, summarizerContextWindow: ONE_CHUNK });
    let history = chat(6, 4_000).messages;
    let prefix: string | undefined;
    let compactions = 0;

    for (let i = 0; i < 30; i++) {
      const r = await guard.beforeModel({ sessionId: 's', messages: history });
      if (r.compaction) compactions++;
      const s = summaryIndex(r.messages);
      expect(s).toBeGreaterThan(0);
      // The compacted prefix: everything up to and including the summary.
      const p = JSON.stringify(r.messages.slice(0, s + 1));
      if (prefix === undefined) prefix = p;
      else expect(p).toBe(prefix);
      expectInvariants(history, r);
      // The provider's count of what was sent, as an AI SDK host reports it.
      await guard.afterModel({ sessionId: 's', usage: { inputTokens: realTokens(r.messages, 1.2), outputTokens: 20 } });
      history = [...history, assistant(`answer ${i}`), user(`next question ${i}`)];
    }
    expect(calls).toHaveLength(1);
    expect(compactions).toBe(1);
  });
});

describe('single flight', () => {
  it('200 concurrent calls of one session share one compaction', async () => {
    const { summarizer, calls } = recordingSummarizer(async () => {
      await sleep(20);
      return '## Task state\nshared';
    });
    const { guard, ev } = setup({ summarizer, summarizerContextWindow: ONE_CHUNK });
    const { messages } = chat(6, 4_000);

    const results = await Promise.all(
      Array.from({ length: 200 }, () => guard.beforeModel({ sessionId: 's', messages })),
    );

    expect(calls).toHaveLength(1);
    expect(ev.of('compaction-end')).toHaveLength(1);
    const first = JSON.stringify(results[0]?.messages);
    for (const r of results) {
      expect(JSON.stringify(r.messages)).toBe(first);
      expect(r.tokens).toBeLessThanOrEqual(r.threshold);
    }
    expect(summaryOf(results[0]!.messages)).toContain('shared');
  });
});

describe('hooks', () => {
  it('beforeCompact receives the context and can cancel the compaction', async () => {
    const { summarizer, calls } = recordingSummarizer();
    const contexts: unknown[] = [];
    const { guard, ev } = setup({
      summarizer,
      beforeCompact: (ctx) => {
        contexts.push(ctx);
        return { cancel: true };
      },
    });
    // Over the threshold (16k) but within the window (20k): sent as it is.
    const { messages } = chat(5, 4_600);
    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(r.tokens).toBeGreaterThan(r.threshold);
    expect(r.tokens).toBeLessThan(WINDOW);
    expect(contexts).toHaveLength(1);
    expect(contexts[0]).toMatchObject({
      sessionId: 's',
      reason: 'threshold',
      threshold: r.threshold,
      messages,
      focus: undefined,
    });
    expect((contexts[0] as { tokens: number }).tokens).toBeGreaterThan(r.threshold);
    expect((contexts[0] as { target: number }).target).toBeLessThan(r.threshold);
    expect(r.compaction).toBeUndefined();
    expect(r.messages).toEqual(messages);
    expect(calls).toHaveLength(0);
    expect(ev.of('compaction-end')).toHaveLength(0);
  });

  it('a cancelled compaction is still cut down when the prompt would not fit the window at all', async () => {
    let asked = 0;
    const { guard } = setup({ summarizer: () => 'S', beforeCompact: () => (asked++, { cancel: true }) });
    const { messages } = chat(8, 4_000); // ~24k tokens: over the 20k window
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(asked).toBe(1);
    expect(r.tokens).toBeLessThanOrEqual(WINDOW);
    expect(pairingProblems(r.messages)).toEqual([]);
  });

  it('beforeCompact can supply the summary: the summarizer is not called', async () => {
    const { summarizer, calls } = recordingSummarizer();
    const { guard } = setup({
      summarizer,
      beforeCompact: () => ({ summary: 'HOOK SUMMARY: billing migrated, tests pending.' }),
    });
    const { messages } = chat(6, 4_000);
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(calls).toHaveLength(0);
    expect(summaryOf(r.messages)).toContain('HOOK SUMMARY: billing migrated, tests pending.');
    expect(r.compaction?.strategy).toBe('summary');
    expectInvariants(messages, r);
  });

  it('afterCompact receives the result and the compacted messages', async () => {
    const seen: Array<{ sessionId: string; result: unknown; messages: readonly GuardMessage[] }> = [];
    const { guard } = setup({ summarizer: () => 'S', afterCompact: (ctx) => void seen.push(ctx) });
    const { messages } = chat(6, 4_000);
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.sessionId).toBe('s');
    expect(seen[0]?.result).toEqual(r.compaction);
    expect(seen[0]?.messages).toEqual(r.messages);
  });

  it.each(['beforeCompact', 'afterCompact'] as const)(
    'a throwing %s becomes an error event; the call still succeeds',
    async (hook) => {
      const { guard, ev } = setup({
        summarizer: () => '## Task state\nok',
        [hook]: () => {
          throw new Error(`${hook} broke`);
        },
      } as ContextGuardOptions);
      const { messages } = chat(6, 4_000);
      const r = await guard.beforeModel({ sessionId: 's', messages });
      expect(ev.of('error').map((e) => e.stage)).toEqual([hook]);
      expect(r.compaction?.strategy).toBe('summary');
      expect(r.tokens).toBeLessThanOrEqual(r.threshold);
      expectInvariants(messages, r);
    },
  );

  it('a rejecting async hook is handled the same way', async () => {
    const { guard, ev } = setup({
      summarizer: () => 'ok',
      beforeCompact: async () => Promise.reject(new Error('async hook broke')),
    });
    const { messages } = chat(6, 4_000);
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(ev.last('error').stage).toBe('beforeCompact');
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
  });
});

describe('manual compaction', () => {
  it('guard.compact makes the next call compact under the threshold, with the focus passed on', async () => {
    const { summarizer, calls } = recordingSummarizer();
    const focus = 'the database migration';
    const hooked: unknown[] = [];
    const { guard, ev } = setup({ summarizer, beforeCompact: (ctx) => void hooked.push(ctx) });
    // ~7.5k tokens: well under the 16k threshold.
    const { messages } = chat(5, 2_000);

    const plain = await guard.beforeModel({ sessionId: 's', messages });
    expect(plain.compaction).toBeUndefined();

    await guard.compact('s', { focus });
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction?.reason).toBe('manual');
    expect(ev.last('compaction-start')).toMatchObject({ reason: 'manual', focus });
    expect(hooked).toMatchObject([{ sessionId: 's', reason: 'manual', focus }]);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.focus).toBe(focus);
    expect(calls[0]?.instructions).toContain(focus);
    expect(summaryIndex(r.messages)).toBeGreaterThan(0);
    expect(r.messages.length).toBeLessThan(messages.length);
    expectInvariants(messages, r);

    // The request is used up: the call after does not compact again.
    const after = await guard.beforeModel({
      sessionId: 's',
      messages: [...messages, assistant('done'), user('thanks')],
    });
    expect(after.compaction).toBeUndefined();
    expect(calls).toHaveLength(1);
  });

  it('with nothing to compact is harmless: no throw, no summarizer call, and every compaction-start has its compaction-end', async () => {
    const { summarizer, calls } = recordingSummarizer();
    const { guard, ev } = setup({ summarizer });
    await guard.compact('fresh', { focus: 'anything' });
    const messages = [SYSTEM, user('hi')];

    const r = await guard.beforeModel({ sessionId: 'fresh', messages });

    expect(r.messages).toEqual(messages);
    expect(calls).toHaveLength(0);
    // A UI showing "compacting…" from the start event waits for the end event.
    expect(ev.of('compaction-start').length).toBe(ev.of('compaction-end').length);
    const next = await guard.beforeModel({
      sessionId: 'fresh',
      messages: [...messages, assistant('hello'), user('bye')],
    });
    expect(next.compaction).toBeUndefined();
    expect(ev.of('error')).toEqual([]);
  });
});

describe('summarizer input', () => {
  it('stays within 80% of summarizerContextWindow, in chunks that fold into the running summary', async () => {
    const summarizerContextWindow = 4_000;
    const { summarizer, calls, replies } = recordingSummarizer(
      (_input, n) => `## Task state\nsummary after chunk ${n}`,
    );
    const { guard } = setup({ summarizer, summarizerContextWindow });
    const { messages } = chat(6, 4_000, LATEST);

    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(r.compaction?.summarizerCalls).toBe(calls.length);
    for (const c of calls) {
      expect(c.prompt.length / 4).toBeLessThanOrEqual(0.8 * summarizerContextWindow);
      // What a summarizer built on a chat model sends: instructions as system, prompt as user.
      expect((c.instructions.length + c.prompt.length) / 4).toBeLessThanOrEqual(0.8 * summarizerContextWindow);
    }
    expect(calls[0]?.previousSummary).toBeUndefined();
    for (let k = 1; k < calls.length; k++) expect(calls[k]?.previousSummary).toBe(replies[k - 1]);
    expect(summaryOf(r.messages)).toContain(`summary after chunk ${calls.length}`);

    // Nothing silently dropped: every summarized message reached some chunk.
    const prompts = calls.map((c) => c.prompt).join('\n');
    const kept = new Set(r.messages);
    for (const m of messages.slice(2)) {
      if (kept.has(m)) continue;
      const label = /(\w+) lorem/.exec(contentText(m))?.[1];
      if (label === undefined) continue;
      expect(prompts, `${label} never reached the summarizer`).toContain(`${label} lorem`);
    }
  });

  it('stays within 80% of summarizerContextWindow when one message holds many parallel tool results', async () => {
    const summarizerContextWindow = 4_000;
    const { summarizer, calls } = recordingSummarizer();
    const { guard } = setup({ summarizer, summarizerContextWindow, prune: false });
    // 15 parallel reads of 3,000 characters: one tool message far larger than a chunk.
    const ids = Array.from({ length: 15 }, (_v, i) => `p${i}`);
    const messages: GuardMessage[] = [
      SYSTEM,
      user(FIRST_REQUEST),
      {
        role: 'assistant',
        content: ids.map((id) => ({
          type: 'tool-call' as const,
          toolCallId: id,
          toolName: 'read_file',
          input: { path: `src/${id}.ts` },
        })),
      },
      {
        role: 'tool',
        content: ids.map((id) => ({
          type: 'tool-result' as const,
          toolCallId: id,
          toolName: 'read_file',
          output: { type: 'text' as const, value: text(`P-${id}`, 3_000) },
        })),
      },
      ...chat(2, 4_000, LATEST).messages.slice(2),
    ];

    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(r.compaction?.summarizerCalls).toBeGreaterThan(0);
    for (const c of calls)
      expect((c.instructions.length + c.prompt.length) / 4).toBeLessThanOrEqual(0.8 * summarizerContextWindow);
    expectInvariants(messages, r);
  });
});

describe('summary updates', () => {
  it('updates the previous summary instead of re-summarizing it', async () => {
    const { summarizer, calls } = recordingSummarizer((_i, n) =>
      n === 1 ? 'FIRST SUMMARY: schema designed.' : 'SECOND SUMMARY: data copied.',
    );
    const { guard } = setup({ summarizer, summarizerContextWindow: ONE_CHUNK });
    const h1 = chat(6, 4_000).messages;
    await guard.beforeModel({ sessionId: 's', messages: h1 });
    const h2 = grow(h1, 'B', 6, 4_000);

    const r = await guard.beforeModel({ sessionId: 's', messages: h2 });

    expect(r.compaction).toBeDefined();
    expect(calls).toHaveLength(2);
    expect(calls[1]?.previousSummary).toContain('FIRST SUMMARY: schema designed.');
    // The first summary is not among the messages, nor are the messages it already covers.
    for (const m of calls[1]?.messages ?? []) {
      expect(contentText(m)).not.toContain(SUMMARY_PREFIX);
      expect(contentText(m)).not.toMatch(/(^|")A1 lorem/);
    }
    expect(
      calls[1]?.messages.some((m) => contentText(m).includes('BA1 lorem') || contentText(m).includes('BU1 lorem')),
    ).toBe(true);
    expect(r.messages.filter(isSummary)).toHaveLength(1);
    expect(summaryOf(r.messages)).toContain('SECOND SUMMARY: data copied.');
    expect(summaryOf(r.messages)).not.toContain('FIRST SUMMARY');
    expectInvariants(h2, r);
  });

  it('a stateful host that sends the compacted prompt back gets its summary updated, not re-summarized', async () => {
    const { summarizer, calls } = recordingSummarizer((_i, n) => (n === 1 ? 'FIRST SUMMARY' : 'SECOND SUMMARY'));
    const { guard } = setup({ summarizer, summarizerContextWindow: ONE_CHUNK });
    const r1 = await guard.beforeModel({ sessionId: 's', messages: chat(6, 4_000).messages });
    const h2 = grow(r1.messages, 'B', 6, 4_000);

    const r2 = await guard.beforeModel({ sessionId: 's', messages: h2 });

    expect(r2.compaction).toBeDefined();
    expect(calls[1]?.previousSummary).toContain('FIRST SUMMARY');
    for (const m of calls[1]?.messages ?? []) expect(contentText(m)).not.toContain(SUMMARY_PREFIX);
    expect(r2.messages.filter(isSummary)).toHaveLength(1);
    expect(summaryOf(r2.messages)).toContain('SECOND SUMMARY');
    expectInvariants(h2, r2);
  });
});

describe('file operations', () => {
  /** Reads and writes early in the conversation, then enough chat to push them into the summary. */
  function withFiles(): GuardMessage[] {
    const { messages } = chat(6, 4_000);
    return [
      ...messages.slice(0, 2),
      ...toolStep('f1', { path: 'src/a.ts' }, 'export const a = 1;', 'read_file'),
      ...toolStep('f2', { path: 'src/b.ts', content: 'export const b = 2;' }, 'written', 'write_file'),
      ...toolStep('f3', { uri: 'docs/guide.md' }, '# Guide', 'fetch_doc'),
      ...messages.slice(2),
    ];
  }

  it('appends the files read and modified to the summary, and carries them across compactions', async () => {
    const { guard } = setup({ summarizer: () => '## Task state\nno file names here' });
    const h1 = withFiles();
    const r1 = await guard.beforeModel({ sessionId: 's', messages: h1 });
    const s1 = summaryOf(r1.messages);
    expect(s1).toMatch(/read:[^\n]*src\/a\.ts/);
    expect(s1).toMatch(/modified:[^\n]*src\/b\.ts/);
    expect(s1).not.toContain('docs/guide.md');

    const h2 = grow(h1, 'B', 6, 4_000);
    const r2 = await guard.beforeModel({ sessionId: 's', messages: h2 });
    expect(r2.compaction).toBeDefined();
    const s2 = summaryOf(r2.messages);
    expect(s2).toMatch(/read:[^\n]*src\/a\.ts/);
    expect(s2).toMatch(/modified:[^\n]*src\/b\.ts/);
  });

  it('follows a custom fileOps configuration, and fileOps: false leaves the footer out', async () => {
    const custom = setup({
      summarizer: () => 'S',
      fileOps: { readTools: ['fetch_doc'], writeTools: [], pathKeys: ['uri'] },
    });
    const r = await custom.guard.beforeModel({ sessionId: 's', messages: withFiles() });
    expect(summaryOf(r.messages)).toMatch(/read:[^\n]*docs\/guide\.md/);
    expect(summaryOf(r.messages)).not.toContain('src/a.ts');

    const off = setup({ summarizer: () => 'S', fileOps: false });
    const r2 = await off.guard.beforeModel({ sessionId: 's', messages: withFiles() });
    expect(summaryOf(r2.messages)).not.toContain('src/a.ts');
    expect(summaryOf(r2.messages)).not.toContain('<files>');
  });
});

describe('calibration reset', () => {
  it('never compacts on the call right after a compaction, with real counts fed back', async () => {
    const { summarizer, calls } = recordingSummarizer();
    const { guard } = setup({ summarizer });
    let history: GuardMessage[] = [SYSTEM, user(FIRST_REQUEST)];
    const compacted: boolean[] = [];
    for (let i = 0; i < 40; i++) {
      history = [...history, assistant(text(`A${i}`, 3_000)), user(text(`U${i}`, 1_000))];
      const r = await guard.beforeModel({ sessionId: 's', messages: history });
      compacted.push(r.compaction !== undefined);
      expect(r.tokens).toBeLessThanOrEqual(r.threshold);
      expectInvariants(history, r);
      // The provider counts 1.3 × chars/4: less than the default correction of 1.5.
      await guard.afterModel({
        sessionId: 's',
        usage: { inputTokens: realTokens(r.messages, 1.3), outputTokens: 750 },
      });
    }
    expect(compacted.filter(Boolean).length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < compacted.length; i++)
      expect(compacted[i - 1] && compacted[i], `compactions on calls ${i - 1} and ${i}`).toBe(false);
    expect(calls.length).toBeGreaterThanOrEqual(compacted.filter(Boolean).length);
  });

  it('the call after a compaction is estimated from the compacted request', async () => {
    const { guard, ev } = setup({ summarizer: () => 'S' });
    const { messages } = chat(6, 4_000);
    const r1 = await guard.beforeModel({ sessionId: 's', messages });
    await guard.afterModel({ sessionId: 's', usage: { inputTokens: realTokens(r1.messages, 1.5) } });
    const r2 = await guard.beforeModel({ sessionId: 's', messages: [...messages, assistant('ok'), user('go on')] });
    expect(r2.compaction).toBeUndefined();
    // The compacted request's size plus the small addition, not the pre-compaction size.
    expect(r2.tokens).toBeLessThan(r1.tokens * 1.2 + 100);
    expect(r2.tokens).toBeLessThan(r1.compaction!.tokensBefore);
    expect(ev.of('compaction-end')).toHaveLength(1);
  });
});

describe('under the threshold', () => {
  it('changes nothing except tool-pairing repair', async () => {
    const { guard, ev } = setup();
    const messages: GuardMessage[] = [
      SYSTEM,
      user('look things up'),
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'checking' },
          { type: 'tool-call', toolCallId: 'lost', toolName: 'search', input: { q: 'x' } },
        ],
      },
      user('any news?'),
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'stray',
            toolName: 'search',
            output: { type: 'text', value: 'late result' },
          },
        ],
      },
      user('well?'),
    ];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(r.compaction).toBeUndefined();
    expect(r.messages).toHaveLength(messages.length);
    expect(pairingProblems(r.messages)).toEqual([]);
    expect(ev.last('tool-pairing-repaired')).toMatchObject({ unansweredCalls: 1, orphanResults: 1 });
    // The unanswered call became a note in its own message; the stray result an assistant note
    // attributed to its tool (never a user message: tool output never takes the user's voice).
    expect(r.messages[2]?.role).toBe('assistant');
    expect(contentText(r.messages[2]!)).not.toContain('"tool-call"');
    expect(r.messages[4]?.role).toBe('assistant');
    expect(contentText(r.messages[4]!)).toContain('Output of tool search');
    expect(contentText(r.messages[4]!)).toContain('late result');
    expectInvariants(messages, r);
  });
});

describe('hard fit', () => {
  it('shrinks a never-pruned tool output larger than the window, keeping its head and tail', async () => {
    const { guard } = setup({ summarizer: () => 'S', prune: { neverPrune: ['memory'] } });
    const huge = `${text('HEAD', 200_000)} TAIL`;
    const messages: GuardMessage[] = [SYSTEM, user('Load the memory.'), ...toolStep('m1', {}, huge, 'memory')];

    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(r.compaction?.strategy).toBe('hard-fit');
    const [part] = toolResults(r.messages);
    const value = outputValue(part!);
    expect(value.startsWith('HEAD lorem')).toBe(true);
    expect(value.endsWith('TAIL')).toBe(true);
    expect(value).toMatch(/omitted/);
    expect(r.tokens).toBeLessThanOrEqual(r.threshold);
    expectInvariants(messages, r);
  });
});

describe('overflow', () => {
  it('a latest request larger than the window: an overflow event, and the request kept by its head and tail', async () => {
    const { guard, ev } = setup({ contextWindow: 8_000, summarizer: () => 'S' });
    const latest = user(`${text('HUGE-START', 60_000)} HUGE-END`); // ~22k tokens in an 8k window
    const messages = [...chat(3, 2_000).messages, latest];

    const r = await guard.beforeModel({ sessionId: 's', messages });

    expect(ev.of('overflow')).toHaveLength(1);
    expect(r.compaction?.overflow).toBe(true);
    // Sent whole it could only be rejected; the guard keeps its beginning and end.
    const sent = r.messages.filter((m) => m.role === 'user').map(userText);
    expect(sent.some((t) => t.startsWith('HUGE-START') && t.endsWith('HUGE-END'))).toBe(true);
    expect(r.tokens).toBeLessThanOrEqual(8_000);
    expectInvariants(messages, r, { overflow: true });
  });

  it('a system prompt larger than the window: the smallest prompt, an overflow event, no throw', async () => {
    const { guard, ev } = setup({ contextWindow: 8_000, summarizer: () => 'S' });
    const huge = system(text('SYSTEM', 40_000));
    const messages: GuardMessage[] = [huge, ...chat(3, 2_000, LATEST).messages.slice(1)];
    const r = await guard.beforeModel({ sessionId: 's', messages });
    expect(ev.of('overflow')).toHaveLength(1);
    expect(r.messages[0]).toBe(huge);
    expect(r.compaction?.overflow).toBe(true);
    expectInvariants(messages, r, { overflow: true });
    expect(ev.of('error')).toEqual([]);
  });
});

describe('options', () => {
  it.each([
    [{ retention: 'x' }, /^retention$/],
    [{ target: -1 }, /^target$/],
    [{ contextWindow: 10_000, target: 9_000 }, /^target$/],
    [{ keepRecentTokens: 0 }, /^keepRecentTokens$/],
    [{ keepFirstUserMessage: 'yes' }, /^keepFirstUserMessage$/],
    [{ maxSummaryTokens: 0 }, /^maxSummaryTokens$/],
    [{ summarizer: 'gpt' }, /^summarizer$/],
    [{ summarizerContextWindow: -5 }, /^summarizerContextWindow$/],
    [{ summarizerTimeoutMs: 0 }, /^summarizerTimeoutMs$/],
    [{ prune: { foo: 1 } }, /^prune/],
    [{ prune: true }, /^prune$/],
    [{ prune: { neverPrune: 'memory' } }, /^prune/],
    [{ circuitBreaker: { failures: 0 } }, /^circuitBreaker\.failures$/],
    [{ circuitBreaker: { cooldownMs: -1 } }, /^circuitBreaker\.cooldownMs$/],
    [{ fileOps: { readTools: 'read' } }, /^fileOps/],
    [{ beforeCompact: 'no' }, /^beforeCompact$/],
    [{ afterCompact: {} }, /^afterCompact$/],
  ])('%j throws ContextGuardConfigError naming the field', (options, field) => {
    let error: unknown;
    try {
      createContextGuard(options as ContextGuardOptions);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ContextGuardConfigError);
    expect((error as ContextGuardConfigError).field).toMatch(field);
  });

  it('accepts every new option at once', () => {
    expect(() =>
      createContextGuard({
        contextWindow: WINDOW,
        summarizer: () => 'S',
        summarizerContextWindow: 8_000,
        summarizerTimeoutMs: 1_000,
        retention: 'summarize-all',
        target: 0.4,
        keepRecentTokens: 2_000,
        keepFirstUserMessage: false,
        maxSummaryTokens: 1_000,
        prune: { maxToolResultTokens: 0.05, protectRecentTokens: 3_000, neverPrune: ['memory'] },
        circuitBreaker: { failures: 5, cooldownMs: 0 },
        fileOps: { readTools: ['cat'], writeTools: ['tee'], pathKeys: ['file'] },
        beforeCompact: () => undefined,
        afterCompact: () => undefined,
      }),
    ).not.toThrow();
  });
});
