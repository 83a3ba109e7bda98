#!/usr/bin/env node
// The `context-guard` command. `replay <file>`: see cli/replay.ts and the README.
//
//   context-guard replay session.jsonl [--window 200000] [--model id] [--json] [--html report.html]
//
// Exit codes: 0 replayed; 1 replayed, but malformed lines were skipped; 2 the file or the options
// could not be used.
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Presets, SingleBar } from 'cli-progress';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { renderHtml } from './report-html.ts';
import { printable } from './printable.ts';
import { formatCalls, formatIssues, formatSummary, type ReplayOptions, ReplayError, replay } from './replay.ts';
import { TRANSCRIPT_FORMATS, TranscriptError, type TranscriptFormat } from './transcripts/index.ts';

export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** whether stderr is a terminal (the progress bar is drawn only then) */
  stderrIsTTY: boolean;
}

const defaultIo = (): Io => ({
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stderrIsTTY: process.stderr.isTTY === true,
});

/** Calls from which the progress bar is drawn (short files replay in a blink). */
const PROGRESS_MIN_CALLS = 50;

function tokens(value: string): number {
  const n = Number(value.replace(/[_,]/g, ''));
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number');
  return n;
}

function fraction(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > 1) throw new InvalidArgumentError('expected a fraction between 0 and 1');
  return n;
}

function count(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a number >= 0');
  return n;
}

function packageVersion(): string {
  try {
    let dir = dirname(realpathSync(process.argv[1] ?? '.'));
    for (let i = 0; i < 5; i++) {
      const file = join(dir, 'package.json');
      if (existsSync(file)) {
        const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
        if (pkg.name === 'context-guard' && pkg.version) return pkg.version;
      }
      dir = dirname(dir);
    }
  } catch {}
  return 'unknown';
}

interface ReplayFlags {
  format?: TranscriptFormat;
  window?: number;
  model?: string;
  summarizer: string;
  buffer?: number;
  target?: number;
  keepRecent?: number;
  warnAt?: number;
  retention?: 'keep-recent' | 'summarize-all';
  exactCounting?: ReplayOptions['exactCounting'];
  prune: boolean;
  maxToolResult?: number;
  keepUserMessages?: number;
  minCallsBetween?: number;
  json?: boolean;
  html?: string;
  quiet?: boolean;
}

/** Runs the command with `argv` (the arguments after the program name); resolves to the exit code. */
export async function main(argv: readonly string[], raw: Io = defaultIo()): Promise<number> {
  // Everything printed may carry text from the file: no control character of it reaches the terminal.
  const io: Io = {
    stdout: (text) => raw.stdout(printable(text)),
    stderr: (text) => raw.stderr(printable(text)),
    stderrIsTTY: raw.stderrIsTTY,
  };
  let exitCode = 0;
  const program = new Command('context-guard')
    .description('Keep every model call of an agent under the context window.')
    .version(packageVersion())
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });

  program
    .command('replay')
    .description(
      'Replay a real agent transcript through the guard, call by call, and show what it would do: estimates ' +
        'against the real counts, the context meter, compactions. Formats: Claude Code session JSONL, Codex CLI ' +
        'rollout JSONL, mini-swe-agent .traj.json, OpenAI-style or AI SDK messages JSON (detected).',
    )
    .argument('<file>', 'the transcript')
    .addOption(new Option('--format <format>', 'force the format instead of detecting it').choices(TRANSCRIPT_FORMATS))
    .option('--window <tokens>', 'context window (default: from --model, else from the file)', tokens)
    .option('--model <id>', "model id: its window from the guard's registry (and the file's model when it has none)")
    .addOption(
      new Option('--summarizer <name>', 'summarizer used by compactions (offline: mechanical digest)')
        .choices(['mechanical'])
        .default('mechanical'),
    )
    .option('--buffer <n>', 'room kept free below the window: tokens, or a fraction of the window when < 1', tokens)
    .option('--target <n>', 'size a compaction aims for: tokens, or a fraction of the window (default 0.25)', tokens)
    .option('--keep-recent <n>', 'recent tail kept verbatim: tokens, or a fraction of the window (default 0.2)', tokens)
    .option('--warn-at <fraction>', 'fraction of the window from which the meter warns (default 0.7)', fraction)
    .addOption(new Option('--retention <mode>', 'what compaction keeps').choices(['keep-recent', 'summarize-all']))
    .addOption(
      new Option('--exact-counting <mode>', 'exact BPE counting (default auto)').choices([
        'auto',
        'off',
        'o200k_base',
        'cl100k_base',
      ]),
    )
    .option('--no-prune', 'turn tool-output pruning off')
    .option('--max-tool-result <n>', 'tool results larger than this are truncated: tokens or a fraction', tokens)
    .option('--keep-user-messages <n>', 'recent user messages kept verbatim after a summary (0: off)', count)
    .option('--min-calls-between <n>', 'calls a compaction should last before the next one (0: no pacing)', count)
    .option('--json', 'print the report as JSON (machine output)')
    .option('--html <file>', 'write a self-contained HTML report with a chart')
    .option('--quiet', 'no per-call log and no progress bar: the summary only')
    .action(async (file: string, flags: ReplayFlags) => {
      exitCode = await runReplay(file, flags, io);
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof ReplayError || error instanceof TranscriptError) {
      io.stderr(`context-guard replay: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  return exitCode;
}

async function runReplay(file: string, flags: ReplayFlags, io: Io): Promise<number> {
  let bar: SingleBar | undefined;
  const options: ReplayOptions = { file, summarizer: 'mechanical', prune: flags.prune };
  if (flags.format !== undefined) options.format = flags.format;
  if (flags.window !== undefined) options.window = flags.window;
  if (flags.model !== undefined) options.model = flags.model;
  if (flags.buffer !== undefined) options.buffer = flags.buffer;
  if (flags.target !== undefined) options.target = flags.target;
  if (flags.keepRecent !== undefined) options.keepRecentTokens = flags.keepRecent;
  if (flags.warnAt !== undefined) options.warnAt = flags.warnAt;
  if (flags.retention !== undefined) options.retention = flags.retention;
  if (flags.exactCounting !== undefined) options.exactCounting = flags.exactCounting;
  if (flags.maxToolResult !== undefined) options.maxToolResultTokens = flags.maxToolResult;
  if (flags.keepUserMessages !== undefined) options.keepUserMessagesTokens = flags.keepUserMessages;
  if (flags.minCallsBetween !== undefined) options.minCallsBetween = flags.minCallsBetween;
  if (io.stderrIsTTY && !flags.quiet) {
    options.onProgress = (done, total) => {
      if (!bar && total >= PROGRESS_MIN_CALLS * 2) {
        bar = new SingleBar(
          { format: 'replaying [{bar}] {percentage}% | {value}/{total} steps | ETA {eta}s', clearOnComplete: true },
          Presets.shades_classic,
        );
        bar.start(total, 0);
      }
      bar?.update(done);
    };
  }
  let report: Awaited<ReturnType<typeof replay>>;
  try {
    report = await replay(options);
  } finally {
    bar?.stop();
  }
  for (const line of formatIssues(report)) io.stderr(`${line}\n`);
  if (flags.html !== undefined) {
    writeFileSync(flags.html, renderHtml(report));
    if (!flags.json) io.stderr(`wrote ${flags.html}\n`);
  }
  if (flags.json) {
    io.stdout(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const lines = [...(flags.quiet ? [] : [...formatCalls(report), '']), ...formatSummary(report)];
    io.stdout(`${lines.join('\n')}\n`);
  }
  return report.issues.length > 0 ? 1 : 0;
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return /[\\/]cli[\\/]index\.(ts|js|cjs|mjs)$/.test(realpathSync(entry));
  } catch {
    return false;
  }
}

if (isMain()) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(
        `context-guard: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 2;
    },
  );
}
