// The example agents' scripted summaries keep to the length the guard asks for ("Use at most N
// words" in the summarizer's instructions), as a real model does: when the list of files read grows
// past it, the oldest files lose their notes first, then are counted in one line. Without this the
// scripted summary would grow with every file and, past the budget, be rejected for the mechanical
// digest: not what a well-behaved model does, so not what the demos should show.

/** Characters the summary may take: about 4 per word asked for (short of the ~5.5 of English prose). */
function budgetChars(instructions: string): number {
  const words = /Use at most ([\d,]+) words/.exec(instructions)?.[1];
  return words === undefined ? Number.POSITIVE_INFINITY : 4 * Number(words.replace(/,/g, ''));
}

/** The count of files an earlier summary folded into one line (see {@link filesSection}). */
export function earlierFiles(previous: string): number {
  return Number(/^- (\d+) earlier files:/m.exec(previous)?.[1] ?? 0);
}

/**
 * The lines of the summary's "## Files" section: one per file (`- path: note`, oldest first) within
 * what the budget leaves once `otherChars` (the other sections) are counted. Over it, the oldest
 * notes go first, then the oldest files, counted in a first line with those `earlier` ones.
 */
export function filesSection(
  files: ReadonlyMap<string, string>,
  earlier: number,
  otherChars: number,
  instructions: string,
): string[] {
  const room = budgetChars(instructions) - otherChars;
  const entries = [...files].map(([path, note]) => ({ path, note }));
  const size = () => entries.reduce((sum, e) => sum + e.path.length + e.note.length + 5, 0) + (earlier > 0 ? 60 : 0);
  for (const e of entries) {
    if (size() <= room) break;
    e.note = 'read';
  }
  while (entries.length > 0 && size() > room) {
    entries.shift();
    earlier++;
  }
  return [
    ...(earlier > 0 ? [`- ${earlier} earlier files: read before; their notes are in the archive.`] : []),
    ...entries.map((e) => `- ${e.path}: ${e.note}`),
  ];
}
