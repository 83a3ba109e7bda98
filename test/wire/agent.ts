// What the wire tests share: the agent's script (a file reader that, at one step, writes a long
// answer, a long reasoning and a whole file), the checks every request a provider received must
// pass, and the guard that no test reaches the network.
import { afterEach, beforeEach, expect, vi, type MockInstance } from 'vitest';
import type { ContextGuardEvent } from '../../src/index.ts';
import { recorder } from '../helpers.ts';
import type { FakeOptions, FakeProvider, Turn, WireCall } from './fake-provider.ts';

/** The provider's window (and, unless a test says otherwise, the guard's). */
export const WINDOW = 8_000;
export const SYSTEM = 'You are a coding agent. Read the files you need, then answer.';
export const REQUEST = 'Read the project files one by one and tell me what they export.';

/** About `chars` characters of source: the output of one `read`, or a file written whole. */
export function fileText(path: string, chars = 3_000): string {
  let out = `// ${path}\n`;
  for (let i = 0; out.length < chars; i++) out += `export const value${i} = compute(${i}, "${path}");\n`;
  return out.slice(0, chars);
}

// The long steps: far over what the guard can keep of them, so the next prompt clips them. Each
// text is numbered, so that a part only the original has (its middle) shows whether it was re-sent.
export const LONG_ANSWER = Array.from(
  { length: 500 },
  (_, i) => `Module ${i} exports a value computed from its input.`,
).join(' ');
export const LONG_REASONING = Array.from({ length: 300 }, (_, i) => `Plan step ${i}: list module ${i}.`).join(' ');
export const LONG_FILE = fileText('src/report.ts', 16_000);
/** Texts from the middle of the long originals: a clip keeps head and tail, never these. */
export const ORIGINAL_MIDDLES = ['Module 250 exports', 'Plan step 150:', 'value150 = compute(150'];

/**
 * The agent: a `read` per step for `steps` steps, then 'done'. At step `answerAt` it reasons and
 * answers at length before its call; at step `writeAt` it writes a whole file (-1: never).
 */
export function readerScript(steps: number, { answerAt = 3, writeAt = 6 } = {}): FakeOptions['reply'] {
  return (_call, index): Turn => {
    if (index >= steps) return { text: 'done' };
    const read = { name: 'read', args: { path: `src/file-${index}.ts` } };
    if (index === answerAt) return { reasoning: LONG_REASONING, text: LONG_ANSWER, calls: [read] };
    if (index === writeAt)
      return {
        text: 'Writing the report.',
        calls: [{ name: 'write', args: { path: 'src/report.ts', content: LONG_FILE } }],
      };
    return { reasoning: `Next: file ${index}.`, text: `Reading file ${index}.`, calls: [read] };
  };
}

/** A script without long steps, for the overflow tests. */
export const plainScript = (steps: number) => readerScript(steps, { answerAt: -1, writeAt: -1 });

/** A run's provider and the guard's events, with the request counts at its hard fits (clips). */
export interface WireRun {
  fake: FakeProvider;
  events: ReturnType<typeof recorder>;
  /** Requests the provider had received at each compaction that clipped (a hard fit). */
  hardFits: number[];
}

/** The guard's events for a run, noting when each hard fit happened. */
export function watch(fake: FakeProvider): WireRun & { onEvent: (e: ContextGuardEvent) => void } {
  const events = recorder();
  const hardFits: number[] = [];
  return {
    fake,
    events,
    hardFits,
    onEvent: (e) => {
      events.onEvent(e);
      if (e.type === 'compaction-end' && e.steps.includes('hard-fit')) hardFits.push(fake.calls.length);
    },
  };
}

/** Whether the user's request reaches the provider whole. */
export const hasRequest = (call: WireCall): boolean => call.userTexts.some((text) => text.includes(REQUEST));

/** What the provider reads of a request: its body, with every item reference expanded to the item. */
function readText(r: WireRun, call: WireCall): string {
  return JSON.stringify(call.body) + call.references.map((id) => JSON.stringify(r.fake.store.get(id))).join('');
}

/**
 * The checks on every request the provider received: within its window by its own count, nothing
 * it rejects (orphans, stale references, bad signatures), the user's request whole; and once the
 * guard has taken a long original out of a request (clipped or summarized), never that original
 * again (a provider reference or a package re-sending it would bring it back).
 */
export function expectEveryRequestSound(r: WireRun, window = WINDOW): void {
  // Where each long original was written (the request its answer replied to), and the first agent
  // request after it without it (-1: none yet).
  const written = ORIGINAL_MIDDLES.map((middle) => ({
    middle,
    at: r.fake.calls.findIndex((c) => JSON.stringify(c.reply ?? '').includes(middle)),
    goneAt: -1,
  }));
  for (const call of r.fake.calls) {
    const what = `request ${call.index} (${call.summarizer ? 'summarizer' : 'agent'})`;
    expect(call.tokens, `${what} by the provider's count`).toBeLessThanOrEqual(window);
    expect(call.rejection, `request ${call.index}: ${call.error}`).toBeUndefined();
    if (call.summarizer) continue;
    expect(hasRequest(call), `request ${call.index}: the user's request, whole`).toBe(true);
    const read = readText(r, call);
    for (const w of written) {
      if (w.at < 0 || call.index <= w.at) continue;
      const carried = read.includes(w.middle);
      if (w.goneAt >= 0)
        expect(
          carried,
          `request ${call.index} carries an original the guard took out at request ${w.goneAt}: ${w.middle}`,
        ).toBe(false);
      else if (!carried) w.goneAt = call.index;
    }
  }
}

/**
 * The usage the guard recorded is the provider's total input (cached included), call for call;
 * and what the guard planned is about what the provider billed.
 */
export function expectUsageAsReported(r: WireRun): void {
  const recorded = r.events.of('usage-recorded');
  const reported = r.fake.agentCalls().filter((c) => c.usage);
  expect(recorded.map((e) => e.inputTokens)).toEqual(reported.map((c) => c.usage!.total));
  // The cache split was exercised: some requests were partly read from the cache.
  expect(reported.some((c) => c.usage!.cached > 0)).toBe(true);
  // Once the guard has a real count to calibrate on, the provider's bill stays near its plan (the
  // provider counts JSON the guard does not see: some slack). An original sent instead of an edit
  // bills the original: twice the plan and more.
  for (const e of recorded.slice(1)) {
    expect(e.inputTokens, `estimated ${e.estimatedTokens}`).toBeLessThanOrEqual(Math.ceil(e.estimatedTokens * 1.5));
  }
}

/** Fails the test when anything reaches the network: the provider packages get the fake's `fetch`. */
export function noNetwork(): void {
  let spy: MockInstance<typeof fetch>;
  beforeEach(() => {
    spy = vi.spyOn(globalThis, 'fetch').mockImplementation(async (input) => {
      throw new Error(`no network in wire tests: ${String(input)}`);
    });
  });
  afterEach(() => {
    expect(spy.mock.calls.map((c) => String(c[0]))).toEqual([]);
    spy.mockRestore();
  });
}

/**
 * An overflow run's checks: at least one rejection (the provider's window is smaller than the
 * guard believes), each followed by exactly one retry that the provider accepts, one
 * `overflow-retry` event per rejection, and the user's request in every request.
 */
export function expectOverflowRecovered(r: WireRun, providerWindow: number): void {
  const agent = r.fake.agentCalls();
  const rejected = agent.filter((c) => c.rejection);
  expect(rejected.length).toBeGreaterThanOrEqual(1);
  for (const c of rejected) {
    expect(c.rejection).toBe('context-length');
    const retry = agent[agent.indexOf(c) + 1];
    expect(retry?.rejection, `retry of request ${c.index}: ${retry?.error}`).toBeUndefined();
    expect(retry!.tokens).toBeLessThanOrEqual(providerWindow);
  }
  expect(r.events.of('overflow-retry')).toHaveLength(rejected.length);
  for (const call of agent) expect(hasRequest(call), `request ${call.index}`).toBe(true);
}
