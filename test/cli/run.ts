// Runs the CLI in-process with its output collected, as a terminal that is not a TTY would see it.
import { main } from '../../cli/index.ts';

export async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    stderrIsTTY: false,
  });
  return { code, stdout, stderr };
}
