// What the model catalog costs a process: the import of the built core (dist/esm, run `npm run
// build` first) and of the catalog package alone, each in a fresh process, and the first window
// look-up (which indexes the catalog) and a later one.
//
//   node bench/catalog-import.ts            (9 fresh processes per row: median, min and max in ms)
//   node bench/catalog-import.ts --runs 21
import { spawnSync } from 'node:child_process';

const runsAt = process.argv.indexOf('--runs');
const RUNS = runsAt >= 0 ? Number(process.argv[runsAt + 1]) : 9;

const probes: Record<string, string> = {
  'import context-guard (dist/esm)': `const t = performance.now(); await import('./dist/esm/src/index.js'); console.log(performance.now() - t);`,
  'import llm-zoo alone': `const t = performance.now(); await import('llm-zoo'); console.log(performance.now() - t);`,
  'first look-up (indexes the catalog)': `const m = await import('./dist/esm/src/index.js'); const t = performance.now(); m.resolveModelInfo('grok-4'); console.log(performance.now() - t);`,
  'a later look-up': `const m = await import('./dist/esm/src/index.js'); m.resolveModelInfo('grok-4'); const t = performance.now(); m.resolveModelInfo('openai/gemini-3-pro-preview'); console.log(performance.now() - t);`,
};

const rows: string[] = ['| what | median ms | min | max |', '| --- | ---: | ---: | ---: |'];
for (const [name, code] of Object.entries(probes)) {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`${name}: ${run.stderr}`);
    times.push(Number(run.stdout.trim()));
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => (times[Math.floor(q * (times.length - 1))] as number).toFixed(2);
  rows.push(`| ${name} | ${at(0.5)} | ${at(0)} | ${at(1)} |`);
}
console.log(`Node ${process.version}, ${RUNS} fresh processes per row\n`);
console.log(rows.join('\n'));
