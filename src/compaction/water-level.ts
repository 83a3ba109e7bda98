// Shrinking many things by a total amount, the fairest way: every size above one level is cut down
// to it (water-filling). Hard fit cuts the prompt's largest tool outputs and messages with it, the
// summarizer's transcript bound its largest messages.

/**
 * The largest cap such that cutting every size above it down to it saves at least `excess`
 * (never below `floor`): the fairest way to shrink many things by a total amount.
 */
export function waterLevel(sizes: number[], excess: number, floor: number): number {
  const sorted = sizes.filter((s) => s > floor).sort((a, b) => b - a);
  let saved = 0;
  for (let k = 0; k < sorted.length; k++) {
    const next = k + 1 < sorted.length ? Math.max(floor, sorted[k + 1] as number) : floor;
    const gain = (k + 1) * ((sorted[k] as number) - next);
    if (saved + gain >= excess) return Math.max(floor, Math.floor((sorted[k] as number) - (excess - saved) / (k + 1)));
    saved += gain;
  }
  return floor;
}
