// Command-line flags of the benches.

/** The number after `name` in `args`, or `fallback` when the flag is absent or not a finite number. */
export function numberFlag(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(name);
  const v = i >= 0 ? Number(args[i + 1]) : Number.NaN;
  return Number.isFinite(v) ? v : fallback;
}
