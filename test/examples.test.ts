// The docs' walkthroughs of `npm run demo` and `npm run example:langchain` are what those commands
// print: each example runs offline (its scripted model, the repository snapshot of
// examples/repo-files.ts), and its whole output is compared, byte for byte, with the block marked
// `<!-- output: <command> -->` in README.md or docs/*.md. Nothing is normalized: the offline runs
// print no time, path or other value that changes between runs or machines (the snapshot stands for
// the live files, whose sizes and contents change with every commit). `node scripts/example-outputs.ts
// --write` rewrites the blocks after a change that moves the output (npm run build first).
//
// The examples' last lines count the prompts whose latest tool result reached the model whole: the
// blocks say "in N of N", so this test also fails when a compaction cuts the file the model asked for.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXAMPLES, firstDifference, outputBlocks, ROOT, runExample } from '../scripts/example-outputs.ts';

describe('the docs show what the examples print', () => {
  it.each(EXAMPLES)('$command', ({ command, file }) => {
    // The examples import the built package (npm test builds it first).
    expect(existsSync(join(ROOT, 'dist/esm/src/index.js')), 'npm run build first').toBe(true);
    const blocks = outputBlocks().filter((b) => b.command === command);
    expect(blocks.length, `a <!-- output: ${command} --> block in README.md or docs/`).toBeGreaterThan(0);
    const output = runExample(file);
    const whole = /reached it whole in (\d+) of (\d+) prompts/.exec(output);
    expect(whole, 'the example counts the latest results sent whole').not.toBeNull();
    expect(whole?.[1], 'every latest tool result reached the model whole').toBe(whole?.[2]);
    expect(output).not.toMatch(/\(hard-fit/);
    for (const block of blocks)
      expect(
        block.text,
        `${block.file}: ${firstDifference(block.text, output)}\n(node scripts/example-outputs.ts --write rewrites it)`,
      ).toBe(output);
  });
});
