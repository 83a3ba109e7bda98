// The docs' walkthroughs of `npm run demo`, `npm run example:langchain` and `npm run
// example:compaction` are what those commands print: each example runs offline (its scripted model
// and summarizer, the repository snapshot of examples/repo-files.ts), and its whole output is
// compared with the block marked `<!-- output: <command> -->` in README.md or docs/*.md. Only the
// time in an archive batch's label is normalized (see normalize: it is when the compaction ran); the
// offline runs print no path or other value that changes between runs or machines (the snapshot
// stands for the live files, whose sizes and contents change with every commit).
// `node scripts/example-outputs.ts --write` rewrites the blocks after a change that moves the output
// (npm run build first).
//
// The two agents count the prompts whose latest tool result reached the model whole: their blocks
// say "in N of N", so this test also fails when a compaction cuts the file the model asked for.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXAMPLES, firstDifference, normalize, outputBlocks, ROOT, runExample } from '../scripts/example-outputs.ts';

describe('the docs show what the examples print', () => {
  it.each(EXAMPLES)('$command', ({ command, file }) => {
    // The examples import the built package (npm test builds it first).
    expect(existsSync(join(ROOT, 'dist/esm/src/index.js')), 'npm run build first').toBe(true);
    const blocks = outputBlocks().filter((b) => b.command === command);
    expect(blocks.length, `a <!-- output: ${command} --> block in README.md or docs/`).toBeGreaterThan(0);
    const output = normalize(runExample(file));
    if (file !== 'examples/compaction.ts') {
      const whole = /reached it whole in (\d+) of (\d+) prompts/.exec(output);
      expect(whole, 'the agent counts the latest results sent whole').not.toBeNull();
      expect(whole?.[1], 'every latest tool result reached the model whole').toBe(whole?.[2]);
    }
    expect(output).not.toMatch(/\(hard-fit|strategy=hard-fit/);
    for (const block of blocks)
      expect(
        normalize(block.text),
        `${block.file}: ${firstDifference(normalize(block.text), output)}\n(node scripts/example-outputs.ts --write rewrites it)`,
      ).toBe(output);
  });
});
