// Loads the real agent transcripts of `../shared/transcripts` (see its README) as model-call
// replays: for every model call, the messages that were sent (as GuardMessages), the tools, and the
// prompt size the provider reported. Benchmarks and optional tests use it; the package does not.
//
// The parsers themselves live in cli/transcripts/ and are shared with `context-guard replay`, so the
// benchmarks and the command read a file the same way.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  type ReplayCall as AnyReplayCall,
  type Transcript as AnyTranscript,
  parseClaudeCode,
  parseMiniSweAgent,
} from '../cli/transcripts/index.ts';

/** A model call of a benchmark transcript: these always have the provider's real count. */
export interface ReplayCall extends AnyReplayCall {
  /** provider-reported total prompt tokens of this call (cached included) */
  inputTokens: number;
}

export interface Transcript extends AnyTranscript {
  calls: ReplayCall[];
}

/** The default folder: `../shared/transcripts`, resolved from the working directory (the repo root). */
export function defaultTranscriptDir(): string {
  return resolve(process.cwd(), '../shared/transcripts');
}

/**
 * Loads every transcript in `dir` (default: {@link defaultTranscriptDir}), sorted by file name.
 * `*.jsonl` files are Claude Code sessions, `*.traj.json` files mini-swe-agent trajectories; other
 * files are ignored, and so are files that yield no model call. Returns `undefined` when the
 * folder does not exist. Never throws on bad data: malformed lines or files are skipped.
 */
export function loadTranscripts(dir?: string): Transcript[] | undefined {
  const folder = dir === undefined ? defaultTranscriptDir() : resolve(dir);
  try {
    if (!existsSync(folder) || !statSync(folder).isDirectory()) return undefined;
  } catch {
    return undefined;
  }
  let names: string[];
  try {
    names = readdirSync(folder).sort();
  } catch {
    return undefined;
  }
  const transcripts: Transcript[] = [];
  for (const name of names) {
    const isClaude = name.endsWith('.jsonl');
    const isMsa = name.endsWith('.traj.json');
    if (!isClaude && !isMsa) continue;
    let transcript: AnyTranscript | undefined;
    try {
      const text = readFileSync(join(folder, name), 'utf8');
      transcript = isClaude ? parseClaudeCode(name, text) : parseMiniSweAgent(name, text);
    } catch {
      transcript = undefined; // unreadable or not JSON at all: skip the file
    }
    if (transcript && transcript.calls.length > 0 && transcript.calls.every((c) => c.inputTokens !== undefined)) {
      transcripts.push(transcript as Transcript);
    }
  }
  return transcripts;
}
