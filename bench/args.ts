// Command-line flags of the benches.

/** The number after `name` in `args`, or `fallback` when the flag is absent or not a finite number. */
export function numberFlag(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(name);
  const v = i >= 0 ? Number(args[i + 1]) : Number.NaN;
  return Number.isFinite(v) ? v : fallback;
}

/** The value after `name` in `args`, or undefined when the flag is absent. */
export function stringFlag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}
