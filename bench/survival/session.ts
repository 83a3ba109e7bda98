// Synthetic sessions for bench/survival.ts: long, deterministic (seeded) agent conversations with
// planted facts. Two shapes:
//   - tool-heavy: an agent reading files, grepping, running tests and commands (big tool outputs,
//     a short user instruction every few steps);
//   - chat-heavy: long user / assistant exchanges (pasted specs, long answers), a tool step now and then.
// Sizes scale with the context window (chars/4 ≈ tokens), so every window sees several compactions.
//
// Five kinds of facts, each planted early, in the middle and late, each a unique string (its
// presence is a plain substring check):
//   constraint: a user's rule, in a user message;
//   path:       a file path, in a tool-call input (read_file) or in a tool output (grep, ls);
//   error:      an exact error message, in the middle of a tool output;
//   id:         an order / ticket / incident number, in user text or in a tool output;
//   decision:   a decision with its reason, in assistant text.
// The filler around them holds distractors of the same kinds (other paths, other errors, other
// order numbers, other decisions), so that finding a fact by query is not trivial.
import { thresholdFor } from '../../src/index.ts';
import type { AssistantMessage, GuardMessage, ToolCallPart, ToolMessage, UserMessage } from '../../src/index.ts';
import { prng } from '../random.ts';

export type Shape = 'tool-heavy' | 'chat-heavy';
export type FactKind = 'constraint' | 'path' | 'error' | 'id' | 'decision';
export const FACT_KINDS: readonly FactKind[] = ['constraint', 'path', 'error', 'id', 'decision'];
export type Position = 'early' | 'middle' | 'late';
const POSITIONS: Record<Position, number> = { early: 0.1, middle: 0.45, late: 0.8 };

export interface Fact {
  kind: FactKind;
  position: Position;
  /** The exact string planted. */
  text: string;
  /** What an agent would ask recall for: the fact's kind and a distinctive word, not the whole string. */
  query: string;
  /** Where it was planted, e.g. 'user message', 'tool output (run_tests)'. */
  carrier: string;
  /** Index of the first call whose history holds the fact. */
  call: number;
}

export interface Call {
  /** Messages the host appends before this model call (a user message, or tool results). */
  before: GuardMessage[];
  /** The model's scripted answer, appended after the call. */
  response: AssistantMessage;
}

export interface Session {
  id: string;
  shape: Shape;
  window: number;
  system: GuardMessage;
  calls: Call[];
  facts: Fact[];
  /** chars/4 of everything the session adds. */
  tokens: number;
}

const WORDS = [
  'ledger',
  'invoice',
  'billing',
  'payment',
  'refund',
  'customer',
  'account',
  'session',
  'cache',
  'queue',
  'worker',
  'parser',
  'router',
  'schema',
  'migration',
  'report',
  'export',
  'import',
  'tax',
  'currency',
  'rounding',
  'discount',
  'coupon',
  'shipment',
  'warehouse',
  'inventory',
  'catalog',
  'pricing',
  'audit',
  'webhook',
  'retry',
  'timeout',
  'batch',
  'stream',
  'token',
  'config',
  'deploy',
  'metrics',
  'alert',
  'tenant',
];
const DIRS = ['billing', 'orders', 'core', 'api', 'jobs', 'shared', 'ledger', 'payments', 'reports', 'auth'];
const PROSE = [
  'the totals are computed per line item and then rounded',
  'we should check how the scheduler batches the retries',
  'the previous run showed the same warning twice',
  'this matches what the spec says about partial refunds',
  'the customer-facing numbers come from the reporting view',
  'I would rather keep the change small and reviewable',
  'the cache is invalidated when the tenant settings change',
  'the test fixtures still use the old currency table',
  'that path is only hit when the webhook arrives late',
  'the migration has to run before the worker restarts',
  'nothing in the logs points at the queue itself',
  'the export job reads from a replica, so it can lag',
  'rounding happens twice in the legacy code path',
  'we can verify it with a focused unit test first',
  'the config loader merges defaults before overrides',
];

/** Random helpers over one PRNG, with a registry of the unique tokens already handed out. */
class Gen {
  readonly rand: () => number;
  private readonly used = new Set<string>();

  constructor(seed: number) {
    this.rand = prng(seed);
  }

  int(lo: number, hi: number): number {
    return lo + Math.floor(this.rand() * (hi - lo + 1));
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rand() * xs.length)] as T;
  }

  chance(p: number): boolean {
    return this.rand() < p;
  }

  /** A string from `make` never returned before (facts and distractors never collide). */
  unique(make: () => string): string {
    for (;;) {
      const s = make();
      if (!this.used.has(s)) {
        this.used.add(s);
        return s;
      }
    }
  }

  hex(n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) s += '0123456789abcdef'[this.int(0, 15)];
    return s;
  }

  alnum(n: number): string {
    let s = this.pick(['q', 'x', 'z', 'k', 'v', 'w']);
    for (let i = 1; i < n; i++) s += 'abcdefghijklmnopqrstuvwxyz0123456789'[this.int(0, 35)];
    return s;
  }

  digits(n: number): string {
    let s = String(this.int(1, 9));
    for (let i = 1; i < n; i++) s += String(this.int(0, 9));
    return s;
  }

  // Distractors: the same kinds as the facts, with other tokens.
  path(): string {
    return this.unique(() => `src/${this.pick(DIRS)}/${this.pick(WORDS)}_${this.hex(4)}.ts`);
  }

  errorLine(): string {
    return this.unique(() =>
      this.pick([
        () => `TypeError: cannot read properties of undefined (reading '${this.alnum(4)}')`,
        () => `Error: ENOENT: no such file or directory, open '/var/app/${this.pick(WORDS)}_${this.hex(4)}.json'`,
        () => `RangeError: invalid currency code ${this.alnum(3).toUpperCase()} in ${this.pick(WORDS)}`,
      ])(),
    );
  }

  orderId(): string {
    return this.unique(() =>
      this.pick([() => `ORD-${this.digits(6)}`, () => `TICKET-${this.digits(5)}`, () => `INC-${this.digits(4)}`])(),
    );
  }

  sentence(): string {
    const s = this.pick(PROSE);
    return `${s[0]?.toUpperCase()}${s.slice(1)}.`;
  }

  /** Prose of about `chars` characters, with a distractor now and then. */
  prose(chars: number): string {
    const out: string[] = [];
    let n = 0;
    while (n < chars) {
      let s: string;
      const r = this.rand();
      if (r < 0.04) s = `See ${this.path()} for the details.`;
      else if (r < 0.07) s = `Order ${this.orderId()} looked fine.`;
      else if (r < 0.09) s = `We considered ${this.pick(WORDS)}_${this.hex(4)} but left it, since ${this.pick(PROSE)}.`;
      else s = this.sentence();
      out.push(s);
      n += s.length + 1;
      if (this.chance(0.15)) {
        out.push('\n\n');
        n += 2;
      }
    }
    return out.join(' ').replace(/ \n\n /g, '\n\n');
  }

  /** A source file of about `chars` characters. */
  code(chars: number): string {
    const lines: string[] = [];
    let n = 0;
    while (n < chars) {
      const w = this.pick(WORDS);
      const id = `${w}${this.hex(3)}`;
      const l = this.pick([
        () => `export function ${id}(items: LineItem[], rate: number): number {`,
        () => `  const ${id} = items.reduce((sum, item) => sum + item.amount * rate, 0);`,
        () => `  if (!${id}) throw new Error('missing ${w}');`,
        () => `  return round(${id}, 2);`,
        () => '}',
        () => `import { ${id} } from '../${this.pick(DIRS)}/${w}.ts';`,
        () => `// ${this.pick(PROSE)}`,
        () => `  logger.debug('${w} computed', { ${id} });`,
      ])();
      lines.push(l);
      n += l.length + 1;
    }
    return lines.join('\n');
  }

  /** Test or command output of about `chars` characters, with distractor errors. */
  log(chars: number): string {
    const lines: string[] = [];
    let n = 0;
    while (n < chars) {
      const r = this.rand();
      let l: string;
      if (r < 0.05) l = `    ${this.errorLine()}`;
      else if (r < 0.1) l = `  at ${this.pick(WORDS)} (${this.path()}:${this.int(1, 400)}:${this.int(1, 80)})`;
      else if (r < 0.14) l = `  {"order":"${this.orderId()}","status":"${this.pick(['paid', 'pending', 'refunded'])}"}`;
      else l = `  ${this.pick(['✓', '✓', '✓', '·'])} ${this.pick(WORDS)} › ${this.pick(PROSE)} (${this.int(1, 90)} ms)`;
      lines.push(l);
      n += l.length + 1;
    }
    return lines.join('\n');
  }

  /** grep-like output of about `chars` characters. */
  grep(chars: number): string {
    const lines: string[] = [];
    let n = 0;
    while (n < chars) {
      const l = `${this.path()}:${this.int(1, 500)}:  ${this.pick(PROSE)}`;
      lines.push(l);
      n += l.length + 1;
    }
    return lines.join('\n');
  }
}

/** A fact's text and query, fresh tokens from `g`. */
function makeFact(g: Gen, kind: FactKind): { text: string; query: string } {
  switch (kind) {
    case 'constraint':
      return g.pick([
        () => {
          const dir = g.unique(() => `vendor-${g.digits(4)}`);
          return { text: `Never modify files under ${dir}/; always use tabs there`, query: `rule about ${dir} files` };
        },
        () => {
          const db = g.unique(() => `ledger_${g.hex(4)}`);
          return {
            text: `Do not touch the ${db} database directly, every schema change goes through a migration`,
            query: `constraint on the ${db} database`,
          };
        },
        () => {
          const pkg = g.unique(() => `@acme/${g.pick(WORDS)}-${g.digits(4)}`);
          return {
            text: `Keep the public API of ${pkg} backwards compatible, no renames`,
            query: `constraint ${pkg} public API`,
          };
        },
      ])();
    case 'path': {
      const dir = g.pick(DIRS);
      const name = g.unique(() => `${g.pick(WORDS)}_${g.hex(4)}`);
      return { text: `src/${dir}/${name}.ts`, query: `file ${name}` };
    }
    case 'error':
      return g.pick([
        () => {
          const prop = g.unique(() => g.alnum(4));
          return {
            text: `TypeError: cannot read properties of undefined (reading '${prop}')`,
            query: `TypeError reading ${prop}`,
          };
        },
        () => {
          const file = g.unique(() => `${g.pick(WORDS)}_${g.hex(4)}`);
          return {
            text: `Error: ENOENT: no such file or directory, open '/var/app/${file}.json'`,
            query: `ENOENT error ${file}`,
          };
        },
        () => {
          const n = g.int(1000, 9000);
          const fn = g.unique(() => `${g.pick(WORDS)}_${g.hex(4)}`);
          return {
            text: `AssertionError: expected ${n} to equal ${n + 1} in ${fn}`,
            query: `assertion failure in ${fn}`,
          };
        },
      ])();
    case 'id': {
      const id = g.orderId();
      const noun = id.startsWith('ORD') ? 'order' : id.startsWith('TICKET') ? 'ticket' : 'incident';
      return { text: id, query: `${noun} ${id}` };
    }
    case 'decision':
      return g.pick([
        () => {
          const host = g.unique(() => `pi-${g.digits(3)}`);
          return {
            text: `Decided to use SQLite instead of Postgres because the deploy target (${host}) has no network`,
            query: `decision SQLite Postgres ${host}`,
          };
        },
        () => {
          const mod = g.unique(() => `${g.pick(WORDS)}_${g.hex(4)}`);
          return {
            text: `Decided to keep the retry loop in ${mod} rather than the queue, because the queue drops jobs on restart`,
            query: `why the retry loop stays in ${mod}`,
          };
        },
        () => {
          const lib = g.unique(() => `${g.pick(WORDS)}-grammar-${g.digits(3)}`);
          return {
            text: `Decided against upgrading the parser to v3 because ${lib} breaks on it`,
            query: `decision parser upgrade ${lib}`,
          };
        },
      ])();
  }
}

export interface SessionSpec {
  shape: Shape;
  window: number;
  seed: number;
  /** chars/4 tokens the session adds in all. */
  tokens: number;
}

/** Places a fact inside a text at a random line or sentence boundary (never at the very start). */
function embed(g: Gen, body: string, fact: string, before: string, after = ''): string {
  const cuts: number[] = [];
  for (let i = body.indexOf('\n'); i >= 0 && cuts.length < 400; i = body.indexOf('\n', i + 1)) cuts.push(i);
  const at = cuts.length > 0 ? g.pick(cuts.slice(Math.floor(cuts.length * 0.25))) : body.length;
  return `${body.slice(0, at)}\n${before}${fact}${after}${body.slice(at)}`;
}

/**
 * Builds a session: calls until `tokens` chars/4 tokens were added, each fact planted once the
 * session has reached its position (10%, 45%, 80% of the tokens, jittered per kind).
 */
export function buildSession(spec: SessionSpec): Session {
  const g = new Gen(spec.seed);
  const unit = spec.window * 4; // characters of a full window
  const heavy = spec.shape === 'tool-heavy';
  const size = (lo: number, hi: number, min: number, max = Infinity) =>
    Math.round(Math.min(max, Math.max(min, unit * (lo + g.rand() * (hi - lo)))));

  // The plan: every (kind, position), due at a fraction of the session.
  const plan: Array<Omit<Fact, 'call' | 'carrier'> & { due: number }> = [];
  for (const position of Object.keys(POSITIONS) as Position[])
    FACT_KINDS.forEach((kind, i) => {
      plan.push({ kind, position, due: POSITIONS[position] + i * 0.015 + g.rand() * 0.01, ...makeFact(g, kind) });
    });
  plan.sort((a, b) => a.due - b.due);
  const facts: Fact[] = [];
  const due = (kind: FactKind, progress: number) => plan.find((f) => f.kind === kind && f.due <= progress);
  const take = (f: (typeof plan)[number], carrier: string, call: number) => {
    plan.splice(plan.indexOf(f), 1);
    const { due: _due, ...rest } = f;
    facts.push({ ...rest, carrier, call });
  };

  const system: GuardMessage = {
    role: 'system',
    content:
      'You are a coding agent working in the acme monorepo. Use the tools to read files, search and run commands. ' +
      'Follow the user instructions exactly.',
  };
  const calls: Call[] = [];
  let chars = 0;
  let callSeq = 0;
  let pending: ToolCallPart | undefined;
  let stepsSinceUser = 0;
  /** What the pending tool call's output must carry. */
  let pendingFact: { fact: (typeof plan)[number]; carrier: string } | undefined;

  const user = (text: string): UserMessage => ({ role: 'user', content: text });

  while (chars / 4 < spec.tokens) {
    const progress = chars / 4 / spec.tokens;
    const i = calls.length;
    const before: GuardMessage[] = [];

    if (pending) {
      // The tool result of the previous call.
      let output: string;
      const name = pending.toolName;
      const big = heavy && g.chance(0.1);
      const len = heavy ? (big ? size(0.12, 0.2, 600) : size(0.01, 0.05, 200)) : size(0.005, 0.02, 200, 40_000);
      if (name === 'write_file') {
        const input = pending.input as { path: string; content: string };
        output = `Wrote ${input.content.length} characters to ${input.path}`;
      } else if (name === 'read_file') output = g.code(len);
      else if (name === 'grep') output = g.grep(len);
      else output = g.log(len);
      if (pendingFact) {
        const { fact, carrier } = pendingFact;
        if (fact.kind === 'error') output = embed(g, output, fact.text, '    ');
        else if (fact.kind === 'path')
          output = embed(g, output, fact.text, '', `:${g.int(1, 300)}:  export const x = 1;`);
        else output = embed(g, output, fact.text, '  {"order":"', '","status":"disputed"}');
        take(fact, carrier, i);
        pendingFact = undefined;
      }
      const message: ToolMessage = {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: pending.toolCallId,
            toolName: name,
            output: { type: 'text', value: output },
          },
        ],
      };
      before.push(message);
      pending = undefined;
      stepsSinceUser++;
    } else {
      // A user message.
      const constraint = due('constraint', progress);
      const id = due('id', progress);
      const parts: string[] = [];
      if (i === 0) {
        parts.push(
          heavy
            ? 'The invoice totals in the billing service are off by a cent for some customers. Find out why and fix it.'
            : 'I want to plan the migration of our billing service to the new ledger. Let us go through it step by step.',
        );
      } else {
        parts.push(
          g.pick([
            'Next, please look at the part that handles this.',
            'Good. Continue with the next step.',
            'Before going on, a few notes from my side.',
            'Can you check this as well?',
          ]),
        );
      }
      if (!heavy && i > 0) parts.push(g.prose(size(0.01, 0.04, 150, 16_000)));
      if (constraint) {
        parts.push(`${constraint.text}.`);
        take(constraint, 'user message', i);
      }
      if (id && (id.position !== 'middle' || !heavy)) {
        parts.push(`The customer on ${id.text} was charged twice, please keep that case in mind.`);
        take(id, 'user message', i);
      }
      if (!heavy && i > 0 && g.chance(0.5)) parts.push(g.prose(size(0.003, 0.01, 80, 4_000)));
      before.push(user(parts.join(heavy ? ' ' : '\n\n')));
      stepsSinceUser = 0;
    }

    // The model's answer: text, and a tool call unless it hands the turn back to the user.
    const nextProgress = (chars + before.reduce((n, m) => n + JSON.stringify(m.content).length, 0)) / 4 / spec.tokens;
    const decision = due('decision', nextProgress);
    const wantsUser =
      due('constraint', nextProgress) !== undefined ||
      (heavy ? stepsSinceUser >= g.int(6, 10) : g.chance(0.8)) ||
      (due('id', nextProgress)?.position !== 'middle' && due('id', nextProgress) !== undefined);
    let text = heavy ? g.prose(size(0.002, 0.006, 60, 1_200)) : g.prose(size(0.02, 0.06, 300, 24_000));
    if (decision) {
      text = heavy ? `${text} ${decision.text}.` : embed(g, text, `${decision.text}.`, '');
      take(decision, 'assistant text', i + 1);
    }
    const content: AssistantMessage['content'] = [{ type: 'text', text }];
    const toolFact = due('error', nextProgress) ?? due('path', nextProgress) ?? due('id', nextProgress);
    if (!wantsUser || (toolFact && (toolFact.kind !== 'id' || toolFact.position === 'middle'))) {
      const toolCallId = `call_${++callSeq}`;
      let call: ToolCallPart;
      if (toolFact?.kind === 'path' && toolFact.position === 'early') {
        call = { type: 'tool-call', toolCallId, toolName: 'read_file', input: { path: toolFact.text } };
        take(toolFact, 'tool-call input (read_file)', i + 1);
      } else if (toolFact?.kind === 'error') {
        call = { type: 'tool-call', toolCallId, toolName: 'run_tests', input: { filter: g.pick(WORDS) } };
        pendingFact = { fact: toolFact, carrier: 'tool output (run_tests)' };
      } else if (toolFact?.kind === 'path') {
        call = { type: 'tool-call', toolCallId, toolName: 'grep', input: { pattern: g.pick(WORDS), dir: 'src' } };
        pendingFact = { fact: toolFact, carrier: 'tool output (grep)' };
      } else if (toolFact?.kind === 'id') {
        call = {
          type: 'tool-call',
          toolCallId,
          toolName: 'bash',
          input: { command: 'node scripts/orders.js --recent' },
        };
        pendingFact = { fact: toolFact, carrier: 'tool output (bash)' };
      } else {
        const r = g.rand();
        call =
          heavy && r < 0.25
            ? {
                type: 'tool-call',
                toolCallId,
                toolName: 'write_file',
                input: { path: g.path(), content: g.code(size(0.01, 0.04, 200)) },
              }
            : r < 0.5
              ? { type: 'tool-call', toolCallId, toolName: 'read_file', input: { path: g.path() } }
              : r < 0.7
                ? { type: 'tool-call', toolCallId, toolName: 'grep', input: { pattern: g.pick(WORDS), dir: 'src' } }
                : r < 0.85
                  ? { type: 'tool-call', toolCallId, toolName: 'run_tests', input: { filter: g.pick(WORDS) } }
                  : { type: 'tool-call', toolCallId, toolName: 'bash', input: { command: `npm run ${g.pick(WORDS)}` } };
      }
      content.push(call);
      pending = call;
    }
    const response: AssistantMessage = { role: 'assistant', content };
    calls.push({ before, response });
    for (const m of [...before, response]) chars += JSON.stringify(m.content).length;
  }
  // A fact whose turn never came (a very short session) is left out rather than counted as lost.
  return {
    id: `${spec.shape}-${spec.window}-${spec.seed}`,
    shape: spec.shape,
    window: spec.window,
    system,
    calls,
    facts,
    tokens: Math.round(chars / 4),
  };
}

/**
 * The sessions of a run for one window and shape: `count` of them, seeds derived from the run's
 * seed, each long enough to cross the guard's default threshold once and then about `compactions`
 * more times (a compaction goes down to the target, half the window, and the prompt grows back).
 */
export function sessionsFor(seed: number, window: number, shape: Shape, count: number, compactions: number): Session[] {
  const threshold = thresholdFor(window, undefined);
  const target = Math.min(window / 2, threshold * 0.9);
  const tokens = Math.round(threshold + compactions * (threshold - target));
  const s = shape === 'tool-heavy' ? 0 : 1;
  return Array.from({ length: count }, (_, k) =>
    buildSession({ shape, window, tokens, seed: seed * 1_000_003 + window + s * 7_919 + k * 104_729 }),
  );
}
