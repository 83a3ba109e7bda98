// Acceptance simulations: long agent sessions through the guard, across window sizes, with a fake
// provider that bills real tokens. Each run asserts on every call that the provider would accept
// the request and the invariants of DESIGN.md; then that compaction never loops, that summarizer
// inputs fit the summarizer's window and that the prompt stays cacheable between compactions
// (see simulation.ts). Scenario tests add their own expectations on top.
// Sizes are expressed as fractions of the window in REAL tokens, so every scenario behaves alike
// from 4k to 1M and the file stays fast.
import { describe, expect, it } from 'vitest';
import type { GuardMessage, ToolDefinition } from '../../src/index.ts';
import { userText } from './invariants.ts';
import {
  charsFor,
  describeRun,
  pdfBase64,
  pngBase64,
  prose,
  runSimulation,
  summarizerCallsReported,
  SYSTEM,
  TOOLS,
  type Scenario,
  type SimulationReport,
  type Step,
  type UserContent,
} from './simulation.ts';

const WINDOWS = [4_000, 8_000, 128_000, 200_000, 1_000_000] as const;

/** `fraction` of the window, in real tokens, as text for a provider of this ratio. */
const sized = (window: number, ratio: number) => (label: string, fraction: number) =>
  prose(label, charsFor(window * fraction, ratio));

/** Plain chat: a user message and a text answer per call. */
function chat(window: number, ratio: number, perStep: number): (i: number) => Step {
  const text = sized(window, ratio);
  return (i) => ({
    user: text(`user request ${i}: please look at this`, perStep * 0.4),
    reply: { text: text(`answer ${i}`, perStep * 0.6) },
  });
}

/**
 * A coding agent: each turn is a user request, `toolSteps` sequential tool calls (read_file and
 * bash alternating, outputs of `output` of the window) and a final answer (`talk` of the window
 * each for the request and the answer: text that only a summary can shrink).
 */
function agent(window: number, ratio: number, output: number, talk = 0.01, toolSteps = 4): (i: number) => Step {
  const text = sized(window, ratio);
  const turn = toolSteps + 1;
  return (i) => {
    const k = i % turn;
    const user = k === 0 ? text(`user request ${i / turn}: fix the failing test in module ${i}`, talk) : undefined;
    if (k === turn - 1) return { user, reply: { text: text(`done with turn ${Math.floor(i / turn)}`, talk) } };
    const call =
      k % 2 === 0
        ? {
            toolName: 'read_file',
            input: { path: `src/module-${i}.ts` },
            output: text(`contents of src/module-${i}.ts`, output),
          }
        : { toolName: 'bash', input: { command: `npm test -- module-${i}` }, output: text(`test output ${i}`, output) };
    return { user, reply: { calls: [call] } };
  };
}

function base(
  window: number,
  name: string,
  overrides: Partial<Scenario> & Pick<Scenario, 'script' | 'steps'>,
): Scenario {
  return {
    name: `${name} @${window}`,
    contextWindow: window,
    system: [SYSTEM],
    tools: TOOLS,
    ratio: 1.2,
    ...overrides,
  };
}

/** Checks shared by every scenario that compacts in normal growth. */
function expectCompacted(report: SimulationReport): void {
  expect(report.compactions.length, describeRun(report)).toBeGreaterThan(0);
  // Every summarizer call happens inside a compaction; re-applying a stored summary calls nothing.
  expect(report.summarizerCalls.length, describeRun(report)).toBe(summarizerCallsReported(report));
  // The fake summarizer never fails. In a tiny window at a dense ratio the guard may still skip it
  // ('no-room': its instructions and the previous summary already fill 80% of its window) and use
  // the mechanical digest; with room to spare (32k and up) it must always be used.
  const failures = report.events
    .of('summarizer-failed')
    .filter((e) => !(e.reason === 'no-room' && report.scenario.contextWindow < 32_000));
  expect(failures, describeRun(report)).toEqual([]);
  // One start and one end event per compaction, and each one shrank the prompt.
  const ends = report.events.of('compaction-end');
  expect(report.events.of('compaction-start').length).toBe(report.compactions.length);
  expect(ends.length).toBe(report.compactions.length);
  for (const e of ends) if (!e.overflow) expect(e.tokensAfter).toBeLessThan(e.tokensBefore);
}

/**
 * `summarize-all`: right after a compaction that summarized, the request is exactly
 * [system..., summary, request, continuation note], then the latest tool step (the call and the
 * results the model has not seen) when the history ends with one. (A compaction that pruning alone
 * brought under target, the cheapest step, keeps the messages.)
 */
function expectSummarizeAllShape(report: SimulationReport): void {
  for (const step of report.compactions) {
    const r = report.records[step]!;
    if (!r.compaction!.steps.some((s) => s === 'summary' || s === 'mechanical')) continue;
    const out = r.result.messages;
    const history = report.history.slice(0, r.historyMessages);
    const tail = out.slice(4);
    expect(
      out.slice(0, 4).map((m) => m.role),
      `step ${step}`,
    ).toEqual(['system', 'user', 'user', 'user']);
    if (tail.length > 0) expect(tail, `step ${step}: the latest tool step, whole`).toEqual(history.slice(-tail.length));
    expect(
      tail.map((m) => m.role),
      `step ${step}`,
    ).toEqual(tail.length > 0 ? ['assistant', ...tail.slice(1).map(() => 'tool')] : []);
    if (r.compaction!.summary) expect(userText(out[1]!), `step ${step}`).toContain(r.compaction!.summary.slice(0, 40));
  }
}

describe.each(WINDOWS)('simulation, %i-token window', (window) => {
  it.each(['keep-recent', 'summarize-all'] as const)('normal chat (%s)', async (retention) => {
    const report = await runSimulation(
      base(window, `chat ${retention}`, { steps: 60, script: chat(window, 1.2, 0.04), options: { retention } }),
    );
    expectCompacted(report);
    // Nothing to prune in a chat: every compaction summarizes.
    expect(report.summarizerCalls.length, describeRun(report)).toBeGreaterThanOrEqual(report.compactions.length);
    if (retention === 'summarize-all') expectSummarizeAllShape(report);
  });

  it.each(['keep-recent', 'summarize-all'] as const)('tool-heavy coding agent (%s)', async (retention) => {
    const report = await runSimulation(
      base(window, `tools ${retention}`, { steps: 60, script: agent(window, 1.2, 0.05), options: { retention } }),
    );
    expectCompacted(report);
    if (retention === 'summarize-all') expectSummarizeAllShape(report);
  });

  it('a single tool result larger than the window', async () => {
    const text = sized(window, 1.2);
    const report = await runSimulation(
      base(window, 'huge tool result', {
        steps: 8,
        script: (i) => {
          if (i === 0)
            return {
              user: 'Read the full build log and tell me why it fails.',
              reply: {
                calls: [{ toolName: 'read_file', input: { path: 'build.log' }, output: text('build.log', 1.5) }],
              },
            };
          if (i % 2 === 1) return { reply: { text: text(`analysis ${i}`, 0.02) } };
          return {
            user: text(`follow-up ${i}`, 0.01),
            reply: {
              calls: [{ toolName: 'bash', input: { command: 'npm run build' }, output: text(`build ${i}`, 0.03) }],
            },
          };
        },
      }),
    );
    // The call right after the giant result compacts, and cheaply: pruning truncates it.
    const first = report.records[1]!.compaction;
    expect(first, describeRun(report)).toBeDefined();
    expect(first!.steps).toContain('prune');
    expect(first!.truncatedToolResults).toBeGreaterThan(0);
  });

  it.each([1.2, 5])('10–20 parallel tool calls in one step (provider ratio %d)', async (ratio) => {
    const text = sized(window, ratio);
    const report = await runSimulation(
      base(window, `parallel tools ratio ${ratio}`, {
        steps: 40,
        ratio,
        script: (i) => {
          const k = i % 3;
          if (k === 2) return { reply: { text: text(`summary of batch ${i}`, 0.01) } };
          const n = 10 + ((i * 7) % 11); // 10..20 calls
          return {
            user: k === 0 ? `Batch ${i}: inspect every module of package ${i}.` : undefined,
            reply: {
              calls: Array.from({ length: n }, (_, c) => ({
                toolName: c % 2 ? 'grep' : 'read_file',
                input: c % 2 ? { pattern: `TODO-${i}-${c}` } : { path: `pkg-${i}/file-${c}.ts` },
                output: text(`result ${i}.${c}`, 0.1 / n),
              })),
            },
          };
        },
      }),
    );
    expectCompacted(report);
  });

  it('no usage metadata (estimates only, provider ratio 1.3)', async () => {
    const report = await runSimulation(
      base(window, 'no usage', { steps: 60, usage: false, ratio: 1.3, script: agent(window, 1.3, 0.05) }),
    );
    expectCompacted(report);
    expect(report.events.of('usage-recorded')).toEqual([]);
  });

  it('a 200-turn conversation: the summarizer runs once per compaction, not once per call', async () => {
    const report = await runSimulation(base(window, 'long', { steps: 200, script: chat(window, 1.2, 0.014) }));
    expectCompacted(report);
    // The summary is memoized across calls: far fewer summarizer calls than model calls.
    expect(report.summarizerCalls.length, describeRun(report)).toBeGreaterThan(0);
    expect(report.summarizerCalls.length, describeRun(report)).toBeLessThanOrEqual(report.records.length / 10);
    // Later compactions update the previous summary instead of summarizing a summary.
    if (report.summarizerCalls.length > 1) expect(report.summarizerCalls.at(-1)!.updated).toBe(true);
  });

  it.each([
    { ratio: 2, invisible: 0 },
    { ratio: 3, invisible: 0.03 },
    { ratio: 5, invisible: 0 },
    { ratio: 1.2, invisible: 0.1 }, // a hidden system prompt of 10% of the window
  ])('provider ratio $ratio (invisible part $invisible of the window)', async ({ ratio, invisible }) => {
    // Tool outputs and enough prose that both pruning and summaries run under the real ratio.
    const report = await runSimulation(
      base(window, `ratio ${ratio}`, {
        steps: 60,
        ratio,
        invisibleTokens: Math.round(invisible * window),
        script: agent(window, ratio, 0.03, 0.05),
      }),
    );
    expectCompacted(report);
    expect(report.summarizerCalls.length, describeRun(report)).toBeGreaterThan(0);
  });

  it('a system prompt larger than the window overflows without throwing', async () => {
    const system = prose('system prompt', charsFor(window * 1.2, 1));
    const report = await runSimulation({
      name: `huge system @${window}`,
      contextWindow: window,
      system: [system],
      ratio: 1,
      steps: 3,
      script: (i) => ({ user: `Question ${i}: what is in the handbook?`, reply: { text: `Answer ${i}.` } }),
    });
    expect(report.events.of('overflow').length).toBe(3);
    for (const r of report.records) {
      expect(r.overflow).toBe(true);
      // The smallest possible prompt: the system message and the latest user request.
      const out = r.result.messages;
      expect(out.length, `step ${r.step}`).toBe(2);
      expect(out[0]).toEqual({ role: 'system', content: system });
      expect(userText(out[1]!)).toContain(`Question ${r.step}: what is in the handbook?`);
    }
  });

  it('tool definitions take 60% of the window', async () => {
    // Forty tools whose definitions add up to 60% of the window (at ratio 1, real = chars/4).
    const each = charsFor((window * 0.6) / 40, 1);
    const tools = Array.from(
      { length: 40 },
      (_, k): ToolDefinition => ({
        name: `tool_${k}`,
        description: prose(`tool ${k} does this`, each - 80),
        inputSchema: { type: 'object', properties: { arg: { type: 'string' } } },
      }),
    );
    const text = sized(window, 1);
    const report = await runSimulation(
      base(window, 'tool definitions', {
        steps: 40,
        ratio: 1,
        tools,
        script: (i) =>
          i % 2 === 0
            ? {
                user: text(`request ${i}`, 0.01),
                reply: {
                  calls: [{ toolName: `tool_${i % 40}`, input: { arg: `x${i}` }, output: text(`out ${i}`, 0.015) }],
                },
              }
            : { reply: { text: text(`reply ${i}`, 0.01) } },
      }),
    );
    // Before any real count the default correction (1.5) may put the first call over; never later.
    expect(report.records.filter((r) => r.overflow && r.step > 0).map((r) => r.step)).toEqual([]);
    expectCompacted(report);
  });

  it('large inline images and PDF documents', async () => {
    const text = sized(window, 1.2);
    // Image cost scales with the window up to the provider's cap (~1,600 tokens); the base64 is
    // large whatever the window, so counting it as text would blow any estimate.
    const side = Math.min(1400, Math.round(Math.sqrt(window * 0.06 * 750)));
    const pages = Math.max(1, Math.round((window * 0.05) / 2500));
    const report = await runSimulation(
      base(window, 'media', {
        steps: 40,
        modelId: 'claude-sonnet-4-5',
        pdfPageTokens: 2500,
        script: (i) => {
          if (i % 2 === 1) return { user: text(`follow-up ${i}`, 0.01), reply: { text: text(`answer ${i}`, 0.03) } };
          const content: UserContent = [
            { type: 'text', text: text(`look at screenshot ${i}`, 0.01) },
            { type: 'image', image: pngBase64(side + i, side, 120_000), mediaType: 'image/png' },
          ];
          // PDFs cost thousands of tokens a page: only where the window can hold one.
          if (window >= 128_000 && i % 6 === 0)
            content.push({ type: 'file', data: pdfBase64(pages, 150_000), mediaType: 'application/pdf' });
          return { user: content, reply: { text: text(`the screenshot ${i} shows`, 0.03) } };
        },
      }),
    );
    expectCompacted(report);
  });
});

/** A deterministic PRNG in [0, 1) from a seed and a step: scripts must be pure functions of the step. */
function rand(seed: number, i: number, salt = 0): number {
  let x = (seed * 0x9e3779b1 + i * 0x85ebca6b + salt * 0xc2b2ae35) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d) >>> 0;
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b) >>> 0;
  return ((x ^ (x >>> 16)) >>> 0) / 2 ** 32;
}

/**
 * Everything at once, at random: chat turns, sequential and parallel tool steps with outputs from
 * tiny to larger than the window, screenshots, and user messages landing mid tool loop.
 */
function mixed(window: number, ratio: number, seed: number): (i: number) => Step {
  const text = sized(window, ratio);
  return (i) => {
    const r = rand(seed, i);
    const size = (lo: number, hi: number) => lo + (hi - lo) * rand(seed, i, 1);
    const ask = rand(seed, i, 2) < 0.4 ? text(`user ${i}: next, please`, size(0.002, 0.03)) : undefined;
    if (r < 0.3)
      return {
        user: text(`user ${i}: a question`, size(0.002, 0.03)),
        reply: { text: text(`answer ${i}`, size(0.005, 0.06)) },
      };
    if (r < 0.6) {
      const call = {
        toolName: r < 0.45 ? 'read_file' : 'bash',
        input: { path: `src/f${i}.ts` },
        output: text(`output ${i}`, size(0.002, 0.1)),
      };
      return { user: ask, reply: { calls: [call] } };
    }
    if (r < 0.72) {
      const n = 5 + Math.floor(rand(seed, i, 3) * 11);
      const calls = Array.from({ length: n }, (_, c) => ({
        toolName: 'grep',
        input: { pattern: `p${i}.${c}` },
        output: text(`match ${i}.${c}`, size(0.001, 0.015)),
      }));
      return { user: ask, reply: { calls } };
    }
    if (r < 0.84) {
      const side = Math.min(1400, Math.round(Math.sqrt(window * 0.04 * 750)));
      const content: UserContent = [
        { type: 'text', text: text(`see screenshot ${i}`, 0.005) },
        { type: 'image', image: pngBase64(side, side - (i % 50), 20_000), mediaType: 'image/png' },
      ];
      return { user: content, reply: { text: text(`the screenshot ${i} shows`, size(0.005, 0.03)) } };
    }
    if (r < 0.9)
      return {
        user: ask,
        reply: {
          calls: [
            { toolName: 'read_file', input: { path: `dump-${i}.log` }, output: text(`dump ${i}`, size(0.3, 1.2)) },
          ],
        },
      };
    return { reply: { text: text(`thinking out loud ${i}`, size(0.005, 0.04)) } };
  };
}

describe.each(WINDOWS)('simulation, random mixed sessions, %i-token window', (window) => {
  it.each([
    { seed: 1, ratio: 1.0, usage: true },
    { seed: 2, ratio: 1.3, usage: false },
    { seed: 3, ratio: 2.5, usage: true },
  ])('seed $seed, ratio $ratio, usage $usage', async ({ seed, ratio, usage }) => {
    const report = await runSimulation(
      base(window, `mixed seed ${seed}`, {
        steps: 80,
        ratio,
        usage,
        modelId: 'claude-sonnet-4-5',
        script: mixed(window, ratio, seed),
      }),
    );
    expect(report.compactions.length, describeRun(report)).toBeGreaterThan(0);
    expect(report.summarizerCalls.length, describeRun(report)).toBe(summarizerCallsReported(report));
  });
});

describe('simulation, special cases', () => {
  it.each([8_000, 128_000])('a flaky summarizer falls back to the mechanical summary (%i)', async (window) => {
    // A chat, so that every compaction needs a summary; every other summarizer call throws.
    const report = await runSimulation(
      base(window, 'flaky summarizer', { steps: 80, summarizerFailEvery: 2, script: chat(window, 1.2, 0.04) }),
    );
    expect(report.compactions.length, describeRun(report)).toBeGreaterThan(1);
    expect(
      report.summarizerCalls.some((c) => c.failed),
      describeRun(report),
    ).toBe(true);
    expect(report.events.of('summarizer-failed').length).toBeGreaterThan(0);
    expect(
      report.records.some((r) => r.compaction?.steps.includes('mechanical')),
      describeRun(report),
    ).toBe(true);
  });

  it('a summarizer with a small window gets chunks that each fit it', async () => {
    // 200k model, 16k summarizer: what a chat compaction summarizes at once (~100k tokens) needs several calls.
    const window = 200_000;
    const report = await runSimulation(
      base(window, 'small summarizer', {
        steps: 40,
        script: chat(window, 1.2, 0.04),
        options: { summarizerContextWindow: 16_000 },
      }),
    );
    expectCompacted(report);
    expect(report.summarizerCalls.length, describeRun(report)).toBeGreaterThan(report.compactions.length);
  });

  it('a manual compaction with a focus compacts on the next call and steers the summary', async () => {
    const window = 128_000;
    const report = await runSimulation(
      base(window, 'manual', {
        steps: 30,
        script: chat(window, 1.2, 0.04),
        beforeStep: async (i, guard, sessionId) => {
          if (i === 15) await guard.compact(sessionId, { focus: 'the database migration' });
        },
      }),
    );
    const manual = report.records[15]!.compaction;
    expect(manual, describeRun(report)).toBeDefined();
    expect(manual!.reason).toBe('manual');
    if (report.summarizerCalls.length > 0) expect(report.summarizerCalls[0]!.focus).toBe('the database migration');
    // The next calls re-apply the manual summary: no new compaction right after.
    expect(report.records.slice(16, 20).filter((r) => r.compaction)).toEqual([]);
  });

  it('the host history is never what the guard returned (stateless host)', async () => {
    // A sanity check of the harness itself: the host's history only grows, message by message.
    const window = 8_000;
    const report = await runSimulation(base(window, 'harness', { steps: 30, script: chat(window, 1.2, 0.04) }));
    const lengths = report.records.map((r) => r.historyMessages);
    for (let k = 1; k < lengths.length; k++) expect(lengths[k]).toBe(lengths[k - 1]! + 2);
    expect(Object.isFrozen(report.history)).toBe(true);
    expect(report.history.every((m: GuardMessage) => Object.isFrozen(m))).toBe(true);
  });
});
