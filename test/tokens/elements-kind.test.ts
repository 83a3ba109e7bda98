// The arrays a new session's measure cache starts with are already of the kind of values they will
// hold (objects for the entries and their messages, numbers beyond the small integers for the
// prefix hashes). A `[]` literal starts as an array of small integers, and Maglev's code for the
// loop that pushes onto it (PromptMeasurer.extend, compiled on earlier sessions' arrays) cannot
// widen it: it deoptimized at every new session's first measure and ran unoptimized for the next
// thousand calls or so (bench/deopts.ts). V8's intrinsics read an array's kind only under
// --allow-natives-syntax, in a process of its own.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect, it } from 'vitest';

const measureModule = pathToFileURL(path.resolve(import.meta.dirname, '../../src/tokens/prompt-measure.ts')).href;
const exactModule = pathToFileURL(path.resolve(import.meta.dirname, '../../src/tokens/exact.ts')).href;

it("starts a new session's measure arrays as the kinds they hold, before anything is pushed", () => {
  // An empty prompt: nothing is pushed, so what is read is the kind the cache was made with.
  const script = `
    const { PromptMeasurer } = await import(${JSON.stringify(measureModule)});
    const { CHARACTER_MEASURE } = await import(${JSON.stringify(exactModule)});
    const measured = new PromptMeasurer(10).measure('s', [], undefined, 'generic', CHARACTER_MEASURE);
    console.log(JSON.stringify({
      entries: %HasObjectElements(measured.entries),
      hashes: %HasDoubleElements(measured.cumHash),
    }));
  `;
  const child = spawnSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  expect(child.stderr).toBe('');
  expect(JSON.parse(child.stdout.trim())).toEqual({ entries: true, hashes: true });
});
