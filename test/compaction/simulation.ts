// The acceptance simulation harness: an agent host that talks to a fake provider through the guard
// for many steps and checks, on every call, what a real provider and a real user would notice.
//
// The host is stateless like the AI SDK: it keeps an immutable, deep-frozen history, always sends
// the FULL history to beforeModel (never the compacted one it got back), and appends the model's
// response and tool results to its own history. The fake provider counts "real" tokens as
// ratio × chars/4 of everything sent, plus a constant invisible part (its own formatting, a hidden
// system prompt), plus images and documents at its own rates; the host feeds that count back
// through afterModel, as the AI SDK reports usage (or not, for providers without usage metadata).
import { Buffer } from 'node:buffer';
import { isDeepStrictEqual } from 'node:util';
import { expect } from 'vitest';
import {
  createContextGuard,
  type BeforeModelResult,
  type CompactionResult,
  type ContextGuard,
  type ContextGuardOptions,
  type FilePart,
  type GuardMessage,
  type ImagePart,
  type SummarizerInput,
  type TextPart,
  type ToolDefinition,
} from '../../src/index.ts';
import { imageTokens, readImageDimensions } from '../../src/tokens/media.ts';
import { recorder } from '../helpers.ts';
import { pngBase64 } from '../png.ts';

export { pngBase64 };
import { expectInvariants, userText } from './invariants.ts';

// ---------------------------------------------------------------------------------------------
// Content builders
// ---------------------------------------------------------------------------------------------

const FILLER = 'The quick brown fox jumps over the lazy dog while the build runs; ';

/**
 * About `chars` characters of prose, starting with `label` so that every message is distinct (never
 * shorter than the label). No trailing whitespace: a continuation may quote the request trimmed.
 */
export function prose(label: string, chars: number): string {
  const head = `${label}: `;
  const n = Math.round(chars);
  if (n <= head.length) return label;
  return (head + FILLER.repeat(Math.ceil((n - head.length) / FILLER.length) + 1).slice(0, n - head.length)).trimEnd();
}

/** Characters of text that cost `tokens` real tokens with a provider of this ratio. */
export const charsFor = (tokens: number, ratio: number): number => Math.max(8, Math.round((tokens * 4) / ratio));

/** A base64 PDF with a page tree of `pages` pages up front, padded with `paddingBytes` of stream data. */
export function pdfBase64(pages: number, paddingBytes = 0): string {
  const kids = Array.from({ length: pages }, (_, k) => `${k + 3} 0 R`).join(' ');
  const head =
    `%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n` +
    `2 0 obj\n<< /Type /Pages /Kids [${kids}] /Count ${pages} >>\nendobj\n`;
  const body = `${pages + 3} 0 obj\n<< /Length ${paddingBytes} >>\nstream\n${'q 1 0 0 1 72 720 cm BT /F1 12 Tf (page) Tj ET Q\n'.repeat(Math.ceil(paddingBytes / 48)).slice(0, paddingBytes)}\nendstream\nendobj\n`;
  return Buffer.from(`${head}${body}%%EOF\n`, 'latin1').toString('base64');
}

/** Page count of a PDF built by {@link pdfBase64}: what the provider bills, read from its page tree. */
function pdfPages(data: unknown): number {
  if (typeof data !== 'string') return 1;
  const head = Buffer.from(data.slice(0, 4000), 'base64').toString('latin1');
  return Number(/\/Type \/Pages .*?\/Count (\d+)/s.exec(head)?.[1] ?? 1);
}

/** Deep-freezes a value, so that any mutation by the guard throws (ESM code is strict). */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    if (ArrayBuffer.isView(value)) return value; // typed arrays cannot be frozen
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// The fake provider
// ---------------------------------------------------------------------------------------------

export interface ProviderModel {
  /** Real tokens per chars/4 token of text (tokenizer density). */
  ratio: number;
  /** Tokens the provider counts that no message shows (its formatting, a hidden system prompt). */
  invisibleTokens: number;
  /** Tokens per PDF page. Images are billed with Anthropic's formula (width × height / 750, capped). */
  pdfPageTokens: number;
}

/** Per-message framing the provider counts (role markers), in characters like the text. */
const FRAMING_CHARS = 12;

interface Cost {
  chars: number;
  media: number;
}

function outputChars(output: unknown): number {
  const o = output as { type?: string; value?: unknown } | undefined;
  if (!o) return 0;
  if (typeof o.value === 'string') return o.value.length;
  if (o.type === 'content' && Array.isArray(o.value)) {
    return o.value.reduce(
      (n: number, item: { type?: string; text?: unknown }) =>
        n + (typeof item.text === 'string' ? item.text.length : JSON.stringify(item).length),
      0,
    );
  }
  return JSON.stringify(o.value ?? '').length;
}

/** A message's cost, cached per (immutable) message object. */
const costs = new WeakMap<object, Cost>();
function messageCost(m: GuardMessage, provider: ProviderModel): Cost {
  const cached = costs.get(m);
  if (cached) return cached;
  const cost: Cost = { chars: FRAMING_CHARS, media: 0 };
  if (typeof m.content === 'string') cost.chars += m.content.length;
  else {
    for (const part of m.content as unknown as Array<Record<string, unknown>>) {
      switch (part['type']) {
        case 'text':
        case 'reasoning':
          cost.chars += String(part['text']).length;
          break;
        case 'image':
          cost.media += imageTokens(readImageDimensions((part as unknown as ImagePart).image), 'anthropic');
          break;
        case 'file':
          cost.media +=
            part['mediaType'] === 'application/pdf' ? pdfPages(part['data']) * provider.pdfPageTokens : 3000;
          break;
        case 'tool-call':
          cost.chars +=
            String(part['toolName']).length +
            String(part['toolCallId']).length +
            JSON.stringify(part['input'] ?? {}).length;
          break;
        case 'tool-result':
          cost.chars +=
            String(part['toolName']).length + String(part['toolCallId']).length + outputChars(part['output']);
          break;
        default:
          cost.chars += JSON.stringify(part).length;
      }
    }
  }
  costs.set(m, cost);
  return cost;
}

export function toolChars(tools: readonly ToolDefinition[] | undefined): number {
  return (tools ?? []).reduce(
    (n, t) => n + t.name.length + (t.description?.length ?? 0) + JSON.stringify(t.inputSchema ?? {}).length,
    0,
  );
}

/** Text characters and media tokens of some messages. */
export function measure(messages: readonly GuardMessage[], provider: ProviderModel): Cost {
  const total: Cost = { chars: 0, media: 0 };
  for (const m of messages) {
    const c = messageCost(m, provider);
    total.chars += c.chars;
    total.media += c.media;
  }
  return total;
}

/** What the provider bills for a request: the "real" input count. */
export function realTokens(
  messages: readonly GuardMessage[],
  tools: readonly ToolDefinition[] | undefined,
  provider: ProviderModel,
): number {
  const { chars, media } = measure(messages, provider);
  return Math.ceil((provider.ratio * (chars + toolChars(tools))) / 4) + provider.invisibleTokens + media;
}

// ---------------------------------------------------------------------------------------------
// The fake summarizer
// ---------------------------------------------------------------------------------------------

export interface SummarizerCall {
  messages: number;
  /** Characters of instructions + prompt: what the summarizer model would be sent. */
  inputChars: number;
  focus: string | undefined;
  updated: boolean;
  maxSummaryTokens: number;
  failed: boolean;
}

/**
 * A deterministic summarizer that records its calls. Its summary is short (at most half of
 * maxSummaryTokens as the provider counts it: 2 characters a token at ratio 1) and names what it
 * covered. `failEvery`: every n-th call throws, to exercise the mechanical fallback.
 */
export function fakeSummarizer(options: { failEvery?: number; ratio?: number } = {}) {
  const charsPerToken = 2 / (options.ratio ?? 1);
  const calls: SummarizerCall[] = [];
  const summarize = async (input: SummarizerInput): Promise<string> => {
    const failed = options.failEvery !== undefined && (calls.length + 1) % options.failEvery === 0;
    calls.push({
      messages: input.messages.length,
      inputChars: input.instructions.length + input.prompt.length,
      focus: input.focus,
      updated: input.previousSummary !== undefined,
      maxSummaryTokens: input.maxSummaryTokens,
      failed,
    });
    if (failed) throw new Error('summarizer unavailable (simulated outage)');
    const firstUser = input.messages.find((m) => m.role === 'user');
    const lines = [
      `Summary of ${input.messages.length} messages${input.previousSummary ? ' (updating the previous summary)' : ''}.`,
      input.focus ? `Focus: ${input.focus}.` : '',
      `Task: ${firstUser ? userText(firstUser).slice(0, 120) : 'continuing the previous task'}.`,
      'Decisions: keep going with the plan. Next steps: continue from the latest request.',
    ];
    return lines
      .filter(Boolean)
      .join('\n')
      .slice(0, Math.min(Math.floor(input.maxSummaryTokens * charsPerToken), 1500));
  };
  return { summarize, calls };
}

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

export interface ToolCallSpec {
  toolName: string;
  input: unknown;
  /** The tool's output text. */
  output: string;
}

/** The model's answer to one call: final text, or tool calls (one assistant message, N calls). */
export type Reply = { text: string } | { calls: ToolCallSpec[] };

export type UserContent = string | Array<TextPart | ImagePart | FilePart>;

/** One model call: an optional new user message appended before it, and the model's reply. */
export interface Step {
  user?: UserContent;
  reply: Reply;
}

export interface Scenario {
  name: string;
  contextWindow: number;
  /** Model calls to simulate. */
  steps: number;
  system: string[];
  tools?: ToolDefinition[];
  /** Provider's real / heuristic ratio for text. */
  ratio: number;
  invisibleTokens?: number;
  pdfPageTokens?: number;
  /** Whether usage is fed back through afterModel (default true). */
  usage?: boolean;
  modelId?: string;
  /** Guard options on top of the window, the summarizer and onEvent. */
  options?: ContextGuardOptions;
  /** Every n-th summarizer call throws. */
  summarizerFailEvery?: number;
  /** The host's script: what happens at call `i`. Must be a pure function of `i`. */
  script: (i: number) => Step;
  /** Called before call `i`, e.g. to request a manual compaction. */
  beforeStep?: (i: number, guard: ContextGuard, sessionId: string) => Promise<void>;
}

export interface StepRecord {
  step: number;
  historyMessages: number;
  outputMessages: number;
  /** The guard's estimate of what it returned, and its threshold. */
  tokens: number;
  threshold: number;
  /** What the provider billed for what the guard returned. */
  real: number;
  /** Heuristic text tokens (chars/4) and media tokens of the output (tools included in text). */
  outputHeuristic: number;
  outputMedia: number;
  /** What the host appended since the previous call (the previous reply, tool results, this user message). */
  addedHeuristic: number;
  addedMedia: number;
  compaction: CompactionResult | undefined;
  overflow: boolean;
  method: string | undefined;
  result: BeforeModelResult;
}

export interface SimulationReport {
  scenario: Scenario;
  provider: ProviderModel;
  records: StepRecord[];
  events: ReturnType<typeof recorder>;
  summarizerCalls: SummarizerCall[];
  /** The host's final history. */
  history: readonly GuardMessage[];
  /** Indices of the calls that ran a new compaction. */
  compactions: number[];
  threshold: number;
  durationMs: number;
}

/** Runs `fn`, prefixing any failure with where it happened (and attaching the run so far). */
function at(where: string, report: () => SimulationReport, fn: () => void): void {
  try {
    fn();
  } catch (error) {
    if (error instanceof Error) {
      error.message = `${where}: ${error.message}`;
      Object.assign(error, { report: report() });
    }
    throw error;
  }
}

let sessions = 0;

/** Builds the message(s) a reply adds to the history. */
function replyMessages(step: number, reply: Reply): GuardMessage[] {
  if ('text' in reply) return [{ role: 'assistant', content: [{ type: 'text', text: reply.text }] }];
  const ids = reply.calls.map((_, k) => `call_${step}_${k}`);
  return [
    {
      role: 'assistant',
      content: reply.calls.map((c, k) => ({
        type: 'tool-call' as const,
        toolCallId: ids[k]!,
        toolName: c.toolName,
        input: c.input,
      })),
    },
    {
      role: 'tool',
      content: reply.calls.map((c, k) => ({
        type: 'tool-result' as const,
        toolCallId: ids[k]!,
        toolName: c.toolName,
        output: { type: 'text' as const, value: c.output },
      })),
    },
  ];
}

/**
 * Runs a scenario and asserts, on every call: no error event (the guard threw internally), the
 * invariants of DESIGN.md, and that what the guard returned fits the provider's window (unless
 * even the smallest prompt overflows). Then asserts there was no compaction loop, that every
 * summarizer call fit the summarizer's window, and that the prompt stayed cacheable between
 * compactions.
 */
export async function runSimulation(scenario: Scenario): Promise<SimulationReport> {
  const report = await simulate(scenario);
  if (process.env['SIM_VERBOSE']) console.log(describeRun(report));
  expectNoCompactionLoop(report);
  expectSummarizerInputsFit(report);
  expectStablePrefix(report);
  return report;
}

/** The step loop of {@link runSimulation}, with the per-call checks only. */
export async function simulate(scenario: Scenario): Promise<SimulationReport> {
  const started = performance.now();
  const window = scenario.contextWindow;
  const provider: ProviderModel = {
    ratio: scenario.ratio,
    invisibleTokens: scenario.invisibleTokens ?? 0,
    pdfPageTokens: scenario.pdfPageTokens ?? 2500,
  };
  const usage = scenario.usage ?? true;
  const events = recorder();
  const summarizer = fakeSummarizer({ failEvery: scenario.summarizerFailEvery, ratio: scenario.ratio });
  const guard = createContextGuard({
    contextWindow: window,
    summarizer: summarizer.summarize,
    onEvent: events.onEvent,
    ...scenario.options,
  });
  const sessionId = `sim-${++sessions}-${scenario.name}`;
  const tools = scenario.tools ? deepFreeze(scenario.tools.map((t) => ({ ...t }))) : undefined;
  const toolHeuristic = toolChars(tools) / 4;
  // Small prompts are cheap to snapshot: prove the input was not mutated on top of freezing it.
  const snapshotInput = window <= 8_000;

  let history: readonly GuardMessage[] = deepFreeze(
    scenario.system.map((content): GuardMessage => ({ role: 'system', content })),
  );
  let pending: GuardMessage[] = []; // appended since the previous call
  const records: StepRecord[] = [];
  let threshold = Number.NaN;
  // What ran so far; attached to a failure as `error.report` so a debugging session can inspect it.
  const report = (): SimulationReport => ({
    scenario,
    provider,
    records,
    events,
    summarizerCalls: summarizer.calls,
    history,
    compactions: records.filter((r) => r.compaction).map((r) => r.step),
    threshold,
    durationMs: performance.now() - started,
  });

  for (let i = 0; i < scenario.steps; i++) {
    const where = `${scenario.name} step ${i}`;
    const step = scenario.script(i);
    if (step.user !== undefined) pending.push({ role: 'user', content: step.user } as GuardMessage);
    deepFreeze(pending);
    history = Object.freeze([...history, ...pending]);
    const added = measure(pending, provider);
    pending = [];

    await scenario.beforeStep?.(i, guard, sessionId);
    const snapshot = snapshotInput ? structuredClone(history) : undefined;
    const eventsBefore = events.events.length;
    const result = await guard.beforeModel({
      sessionId,
      ...(scenario.modelId ? { modelId: scenario.modelId } : {}),
      messages: history,
      ...(tools ? { tools } : {}),
    });
    const callEvents = events.events.slice(eventsBefore);
    threshold = result.threshold;

    // Over the threshold is allowed when the system messages and tools alone are over it (reported
    // once with fixed-over-threshold): then the prompt is held under its limit.
    const fixed = events.events.findLast((e) => e.type === 'fixed-over-threshold');
    const overflow =
      callEvents.some((e) => e.type === 'overflow') ||
      result.compaction?.overflow === true ||
      (fixed?.type === 'fixed-over-threshold' && result.tokens > result.threshold && result.tokens <= fixed.limit);
    const real = realTokens(result.messages, tools, provider);
    const out = measure(result.messages, provider);
    const estimate = callEvents.find((e) => e.type === 'estimate');
    const record: StepRecord = {
      step: i,
      historyMessages: history.length,
      outputMessages: result.messages.length,
      tokens: result.tokens,
      threshold: result.threshold,
      real,
      outputHeuristic: out.chars / 4 + toolHeuristic,
      outputMedia: out.media,
      addedHeuristic: added.chars / 4,
      addedMedia: added.media,
      compaction: result.compaction,
      overflow,
      method: estimate?.type === 'estimate' ? estimate.method : undefined,
      result,
    };
    records.push(record);

    at(where, report, () => {
      // An error event means the guard threw inside and passed the prompt through unguarded.
      expect(callEvents.filter((e) => e.type === 'error')).toEqual([]);
      // The host always sends well-paired tool calls: a repair means the guard broke a pair itself.
      expect(callEvents.filter((e) => e.type === 'tool-pairing-repaired')).toEqual([]);
      expect(result.contextWindow).toBe(window);
      expectInvariants(history, result, { overflow, ...(snapshot !== undefined ? { snapshot } : {}) });
      if (!overflow) {
        const detail =
          `the provider would reject the request: real ${real} > window ${window} ` +
          `(estimate ${result.tokens}, threshold ${result.threshold}, method ${record.method}, ` +
          `compaction ${result.compaction ? `${result.compaction.strategy} ${Math.round(result.compaction.tokensBefore)}→${Math.round(result.compaction.tokensAfter)}` : 'none'})`;
        expect(real, detail).toBeLessThanOrEqual(window);
      }
    });

    // The model answers; the host appends its reply and the tool results to its own history.
    const reply = replyMessages(i, step.reply);
    if (usage) {
      const outputTokens = Math.ceil((provider.ratio * measure(reply.slice(0, 1), provider).chars) / 4);
      await guard.afterModel({ sessionId, usage: { inputTokens: real, outputTokens } });
    }
    pending.push(...reply);
  }

  return report();
}

// ---------------------------------------------------------------------------------------------
// Cross-step checks
// ---------------------------------------------------------------------------------------------

/**
 * No compaction loop, checked three ways over the threshold compactions (manual ones and calls
 * where even the smallest prompt overflows are exempt):
 * - justified: what the guard would have sent without compacting (the previous call's output plus
 *   what the host appended since) is near the threshold, priced the most generous way the guard may
 *   legitimately price it (additions at the larger of the real ratio and the default correction 1.5;
 *   without usage, the whole prompt at 1.5);
 * - spaced: within `spacing` calls after a compaction, another one fires only if what was added since
 *   exceeds the gap between the threshold and what that compaction left (its target, or more when
 *   what it had to keep verbatim was larger: see {@link irreducibleFloor});
 * - bounded: at most a third of the calls compact, not counting those paid for by growth (what was
 *   added since the previous compaction exceeds that gap: nothing can absorb it).
 */
export function expectNoCompactionLoop(
  report: SimulationReport,
  options: { slack?: number; spacing?: number } = {},
): void {
  const { scenario, records } = report;
  const slack = options.slack ?? 0.9;
  const spacing = options.spacing ?? 3;
  const usage = scenario.usage ?? true;
  const addRate = Math.max(scenario.ratio, 1.5);
  const added = (r: StepRecord): number => r.addedHeuristic * addRate + r.addedMedia;
  const counted = records.filter((r) => r.compaction && !r.overflow && r.compaction.reason === 'threshold');
  let previous: StepRecord | undefined;
  let paidByGrowth = 0;
  for (const r of counted) {
    const c = r.compaction!;
    const where = `${scenario.name} step ${r.step}`;
    const prev = records[r.step - 1];
    if (prev && !prev.overflow) {
      const wouldBe = usage
        ? prev.real + added(r)
        : 1.5 * (prev.outputHeuristic + r.addedHeuristic) + prev.outputMedia + r.addedMedia;
      at(
        where,
        () => report,
        () =>
          expect(
            wouldBe,
            `unjustified compaction (estimate ${c.tokensBefore} → ${Math.round(c.tokensAfter)}, threshold ${r.threshold}): the previous output ` +
              `(real ${prev.real}) plus what was added (~${Math.round(r.addedHeuristic)} heuristic tokens) is only ~${Math.round(wouldBe)}`,
          ).toBeGreaterThanOrEqual(slack * r.threshold),
      );
    }
    // Growth since the previous compaction, and the room that compaction left under the threshold.
    const since = records.slice((previous?.step ?? -1) + 1, r.step + 1).reduce((n, x) => n + added(x), 0);
    // Without usage the guard prices what it kept at the default correction (1.5), not at the real ratio.
    const floor = previous ? irreducibleFloor(report, previous) * (usage ? 1 : Math.max(1, 1.5 / scenario.ratio)) : 0;
    const gap = previous ? r.threshold - Math.max(previous.compaction!.target, floor) : 0;
    // Estimates carry some noise (framing, calibration): a tenth of the gap and 3% of the threshold.
    const enough = slack * gap - 0.03 * r.threshold;
    if (since >= enough) paidByGrowth++;
    if (previous && r.step - previous.step <= spacing) {
      const p = previous.compaction!;

      at(
        where,
        () => report,
        () =>
          expect(
            since,
            `compaction loop: compacted again ${r.step - previous!.step} call(s) after the compaction at step ${previous!.step} ` +
              `(which left ${Math.round(p.tokensAfter)} for a target of ${Math.round(p.target)}, threshold ${r.threshold}; ` +
              `this one ${Math.round(c.tokensBefore)} → ${Math.round(c.tokensAfter)}) although only ~${Math.round(since)} tokens were added since, less than the gap ${Math.round(gap)}`,
          ).toBeGreaterThanOrEqual(enough),
      );
    }
    previous = r;
  }
  at(
    scenario.name,
    () => report,
    () =>
      expect(
        counted.length - paidByGrowth,
        `${counted.length} compactions (${paidByGrowth} paid for by growth) in ${records.length} calls at steps ${report.compactions.join(', ')}`,
      ).toBeLessThanOrEqual(Math.max(1, Math.floor(records.length / 3))),
  );
}

/**
 * Prompt caching: between compactions, what the guard sends only grows at the end. Each call's
 * output starts with the previous call's output, message for message (the stored summary is
 * re-applied byte for byte, not rewritten), so a provider's prompt cache keeps hitting.
 */
export function expectStablePrefix(report: SimulationReport): void {
  const { records, scenario } = report;
  for (let k = 1; k < records.length; k++) {
    const before = records[k - 1]!;
    const now = records[k]!;
    if (now.compaction || now.overflow || before.overflow) continue;
    const a = before.result.messages;
    const b = now.result.messages;
    let same = 0;
    while (same < a.length && same < b.length && (a[same] === b[same] || isDeepStrictEqual(a[same], b[same]))) same++;
    at(
      `${scenario.name} step ${k}`,
      () => report,
      () =>
        expect(
          same,
          `no compaction ran, yet the output no longer starts with the previous one: message ${same} of ${a.length} changed`,
        ).toBe(a.length),
    );
  }
}

/**
 * Real tokens of what compaction could not have dropped from a record's output: all of it but the
 * history messages it kept (verbatim, clipped or pruned) beyond the minimum. The minimum is the
 * system messages, the first user request at the top (keep-recent keeps it), the latest user
 * request (verbatim or quoted), the last message or tool-call group (a call and its results go
 * together), the latest tool step (the last assistant message and what follows it when no
 * assistant message does: results the model has not seen, which no cost target may cut), the user
 * messages a summary carries over verbatim before itself (within their budget: a cost target does
 * not cut the user's words either), and what the guard wrote itself (the summary, the
 * continuation); tool definitions are in the real count too.
 */
export function irreducibleFloor(report: SimulationReport, record: StepRecord): number {
  const history = report.history.slice(0, record.historyMessages);
  const out = record.result.messages;
  const head = (m: GuardMessage | undefined): string => (m ? userText(m).slice(0, 40) : '');
  const userHeads = history
    .filter((m) => m.role === 'user')
    .map(head)
    .filter((t) => t.length > 0);
  const latest = head([...history].reverse().find((m) => m.role === 'user'));
  const first = head(history.find((m) => m.role === 'user'));
  const top = out.findIndex((m) => m.role !== 'system');
  // The last unit starts at the last message that is not a tool result (its call's message).
  let lastUnit = out.length - 1;
  while (lastUnit > 0 && out[lastUnit]!.role === 'tool') lastUnit--;
  const lastAssistant = out.findLastIndex((m) => m.role === 'assistant');
  if (lastAssistant >= 0 && out.slice(lastAssistant + 1).some((m) => m.role === 'tool'))
    lastUnit = Math.min(lastUnit, lastAssistant);
  const summary = out.findIndex((m) => m.role === 'user' && userText(m).startsWith('[Context Summary]'));
  const droppable = out.filter((m, k) => {
    if (m.role === 'system' || k >= lastUnit) return false;
    if (m.role === 'user' && k < summary) return false;
    if (m.role !== 'user') return true; // assistant and tool messages all come from the history
    const text = userText(m);
    if (latest && text.includes(latest)) return false;
    if (k === top && first && text.startsWith(first)) return false;
    return userHeads.some((h) => text.startsWith(h)); // else the guard wrote it
  });
  const { chars, media } = measure(droppable, report.provider);
  return record.real - Math.ceil((report.provider.ratio * chars) / 4) - media;
}

/** Every summarizer call fits the summarizer's window (the guarded model's by default) at the provider's ratio. */
export function expectSummarizerInputsFit(report: SimulationReport): void {
  const { scenario } = report;
  const window = scenario.options?.summarizerContextWindow ?? scenario.contextWindow;
  report.summarizerCalls.forEach((call, k) => {
    const real = Math.ceil((scenario.ratio * call.inputChars) / 4);
    at(
      `${scenario.name} summarizer call ${k}`,
      () => report,
      () =>
        expect(
          real,
          `summarizer input of ${call.messages} messages costs ${real} tokens, over its ${window}-token window`,
        ).toBeLessThanOrEqual(window),
    );
  });
}

/** Summarizer calls made by compactions (as they report them) vs observed: every call belongs to a compaction. */
export function summarizerCallsReported(report: SimulationReport): number {
  return report.records.reduce((n, r) => n + (r.compaction?.summarizerCalls ?? 0), 0);
}

/** A one-line digest of a run, for logs and failure messages. */
export function describeRun(report: SimulationReport): string {
  const maxReal = Math.max(...report.records.map((r) => r.real));
  const compactions = report.compactions.map((step) => `${step}:${report.records[step]!.compaction!.steps.join('+')}`);
  return (
    `${report.scenario.name}: ${report.records.length} calls, compactions at [${compactions.join(', ')}], ` +
    `${report.summarizerCalls.length} summarizer calls, max real ${maxReal} / ${report.scenario.contextWindow}, ${Math.round(report.durationMs)} ms`
  );
}

/** The coding agent's system prompt and tools, shared by the simulation tests and the cost bench. */
export const SYSTEM = 'You are a coding agent. Work in the repository, use the tools, and report what you changed.';

export const TOOLS: ToolDefinition[] = [
  {
    name: 'read_file',
    description: 'Read a file of the repository.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'bash',
    description: 'Run a shell command and return its output.',
    inputSchema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  },
  {
    name: 'grep',
    description: 'Search the repository for a pattern.',
    inputSchema: { type: 'object', properties: { pattern: { type: 'string' } }, required: ['pattern'] },
  },
];
