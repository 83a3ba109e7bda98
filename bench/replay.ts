// Time and memory of `context-guard replay` against the number of calls in the file: a synthetic
// agent session (OpenAI message list: a request, then per call an assistant tool call with a usage
// count and a tool result of about 600 characters), replayed through both passes (estimation and
// guard) in a 200k window with the mechanical summarizer, as the command does.
//
//   node bench/replay.ts                       (1,000, 10,000 and 100,000 calls)
//   node bench/replay.ts --calls 1000,20000
//
// Each row is one replay in a fresh process (this script runs itself per row), so that one row's
// heap does not carry into the next: wall time, CPU time (user + system: what the replay costs on a
// machine other processes share), the process's peak resident memory, and the largest heap in use
// (sampled every 500 calls: the transcript, the guard's per-message measures, the report, and what
// the collector has not reclaimed yet).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** An OpenAI message list of `calls` model calls. */
function transcript(calls: number): string {
  const messages: unknown[] = [
    { role: 'system', content: 'You are a coding agent. Read the files you need, then answer.' },
    { role: 'user', content: 'Migrate the ledger module to the new API, file by file.' },
  ];
  let tokens = 60;
  for (let i = 0; i < calls; i++) {
    const id = `call_${i}`;
    const output = `// src/ledger/part_${i}.ts\n${'export const value = compute(1, 2, 3);\n'.repeat(15)}`;
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id, type: 'function', function: { name: 'read_file', arguments: `{"path":"src/ledger/part_${i}.ts"}` } },
      ],
      usage: { prompt_tokens: tokens, completion_tokens: 20 },
    });
    messages.push({ role: 'tool', tool_call_id: id, content: output });
    tokens += 20 + Math.ceil(output.length / 4) + 4;
  }
  return JSON.stringify({ model: 'gpt-4o', messages });
}

if (process.argv[2] === '--row') {
  const file = process.argv[3] as string;
  const { replay } = await import('../cli/replay.ts');
  const started = performance.now();
  // The heap in use, sampled every 1,000 steps (two per call): its largest is the row's peak heap.
  let peakHeap = 0;
  const report = await replay({
    file,
    window: 200_000,
    summarizer: 'mechanical',
    onProgress: (done) => {
      if (done % 1_000 === 0) peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
    },
  });
  const seconds = (performance.now() - started) / 1_000;
  const usage = process.resourceUsage();
  const cpuSeconds = (usage.userCPUTime + usage.systemCPUTime) / 1e6;
  const peakMb = usage.maxRSS / 1_024;
  const heapMb = Math.max(peakHeap, process.memoryUsage().heapUsed) / 1e6;
  console.log(
    JSON.stringify({
      calls: report.summary.calls,
      compactions: report.summary.compactions,
      seconds,
      cpuSeconds,
      peakMb,
      heapMb,
    }),
  );
} else {
  const counts = (option('--calls') ?? '1000,10000,100000').split(',').map(Number);
  const dir = mkdtempSync(join(tmpdir(), 'cg-replay-bench-'));
  console.log(`node ${process.version}; one fresh process per row`);
  console.log(
    '| calls | file MB | compactions | replay s | CPU s | CPU s per 1,000 calls | peak RSS MB | peak heap MB |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
  try {
    for (const calls of counts) {
      const file = join(dir, `session-${calls}.json`);
      const text = transcript(calls);
      writeFileSync(file, text);
      const child = spawnSync(
        process.execPath,
        ['--max-old-space-size=4096', fileURLToPath(import.meta.url), '--row', file],
        {
          encoding: 'utf8',
          maxBuffer: 1 << 24,
        },
      );
      const line = child.stdout.trim().split('\n').at(-1) ?? '';
      if (child.status !== 0 || !line.startsWith('{')) {
        const why = (
          child.stderr
            .trim()
            .split('\n')
            .find((l) => /heap|memory|Error/.test(l)) ?? `exit ${child.status}`
        ).slice(0, 80);
        console.log(
          `| ${calls.toLocaleString('en-US')} | ${(text.length / 1e6).toFixed(1)} | | failed: ${why} | | | | |`,
        );
        continue;
      }
      const r = JSON.parse(line) as {
        calls: number;
        compactions: number;
        seconds: number;
        cpuSeconds: number;
        peakMb: number;
        heapMb: number;
      };
      console.log(
        `| ${calls.toLocaleString('en-US')} | ${(text.length / 1e6).toFixed(1)} | ${r.compactions} | ${r.seconds.toFixed(1)} | ${r.cpuSeconds.toFixed(1)} | ${((r.cpuSeconds * 1_000) / calls).toFixed(2)} | ${r.peakMb.toFixed(0)} | ${r.heapMb.toFixed(0)} |`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
