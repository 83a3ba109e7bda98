// The layout rules of docs/ARCHITECTURE.md, read from the code (test/architecture.ts reads it): the
// imports of every file of src/ and adapters/ (`import type`, re-exports and dynamic imports
// included), the files' places, the length of every function (biome's noExcessiveLinesPerFunction,
// the rule `npm run lint` runs) and the calls passing `true` or `false`.
//
// A rule that today's code does not keep yet has its offenders listed below. Each list may only
// shrink: the test fails when a new offender appears, and also when a listed one is gone, until it
// is taken off the list (`node test/architecture.ts` prints what each rule finds). The lists are
// meant to end empty.
import { describe, expect, it } from 'vitest';
import {
  biomeConfig,
  booleanArguments,
  cycles,
  files,
  functionsOf,
  graph,
  layerOffenders,
  lengthRule,
  longFunctions,
  looseFiles,
  sameNames,
  staleFileNames,
  unnamedFolders,
  upwardValueImports,
} from './architecture.ts';

/** Import cycles (type-level ones too), each as the sorted files of one strongly connected group. */
const KNOWN_CYCLES: string[][] = [];

/** The loose files of src/ while there are more than MAX_LOOSE_FILES of them (to move into stage folders). */
const MAX_LOOSE_FILES = 8;
const KNOWN_LOOSE_FILES: string[] = [];

/** Files that share a name with a file of the folder above or below them (`index.ts` excepted). */
const KNOWN_SAME_NAMES: string[][] = [];

/** Functions over 60 lines, as `file: name` (biome turns the rule off for these files in biome.json). */
const KNOWN_LONG_FUNCTIONS: string[] = [];

/**
 * Calls that pass `true` or `false` as an argument, as `file: callee` (an options object or two
 * functions say what the flag means; zod's `z.literal(false)` and a Map's `set(key, true)` are values).
 */
const KNOWN_BOOLEAN_ARGUMENTS: string[] = [];

// --- the rules ----------------------------------------------------------------------------------

describe('architecture', () => {
  it('reads the imports of every file (a sanity check of the reader itself)', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(graph.get('src/index.ts')).toContain('src/guard.ts');
    // `export type *` and `import type` count as imports.
    expect(graph.get('src/index.ts')).toContain('src/events.ts');
    expect(functionsOf('src/index.ts')).toEqual([]);
  });

  it('has no import cycle in src/ and adapters/, type-level ones included, beyond the known ones', () => {
    expect(
      cycles(),
      'KNOWN_CYCLES (test/architecture.test.ts) lists the known offenders: a new one must be fixed, a fixed one taken off the list',
    ).toEqual(KNOWN_CYCLES);
  });

  it('adapters import only the public core (src/index.ts), and the core no adapter or framework', () => {
    expect(layerOffenders()).toEqual([]);
  });

  it('imports values only down the layers of docs/ARCHITECTURE.md (test/architecture.ts LAYERS)', () => {
    expect(upwardValueImports()).toEqual([]);
  });

  it(`has at most ${MAX_LOOSE_FILES} loose files in src/, beyond the known ones`, () => {
    const loose = looseFiles();
    if (loose.length > MAX_LOOSE_FILES)
      expect(
        loose,
        'KNOWN_LOOSE_FILES (test/architecture.test.ts) lists the known offenders: a new one must be fixed, a fixed one taken off the list',
      ).toEqual(KNOWN_LOOSE_FILES);
    else expect(KNOWN_LOOSE_FILES, 'src/ is within the limit: empty KNOWN_LOOSE_FILES').toEqual([]);
  });

  it('has no two files of one name in a folder and a folder directly inside it, beyond the known ones', () => {
    expect(
      sameNames(),
      'KNOWN_SAME_NAMES (test/architecture.test.ts) lists the known offenders: a new one must be fixed, a fixed one taken off the list',
    ).toEqual(KNOWN_SAME_NAMES);
  });

  it('passes no positional `true` or `false` to a function, beyond the known ones', () => {
    expect(
      booleanArguments(),
      'KNOWN_BOOLEAN_ARGUMENTS (test/architecture.test.ts) lists the known offenders: a new one must be fixed, a fixed one taken off the list',
    ).toEqual(KNOWN_BOOLEAN_ARGUMENTS);
  });

  it('has no function over 60 lines in src/ and adapters/, beyond the known ones', () => {
    expect(lengthRule()).toEqual({ level: 'error', options: { maxLines: 60 } });
    expect(
      longFunctions(),
      'KNOWN_LONG_FUNCTIONS (test/architecture.test.ts) lists the known offenders: a new one must be fixed, a fixed one taken off the list',
    ).toEqual(KNOWN_LONG_FUNCTIONS);
    // biome.json turns the rule off for exactly the files that still hold a known one.
    const off = biomeConfig.overrides?.find(
      (o) => o.linter?.rules?.complexity?.noExcessiveLinesPerFunction === 'off',
    )?.includes;
    expect(
      [...(off ?? [])].sort(),
      'the biome.json override that turns noExcessiveLinesPerFunction off lists the files of KNOWN_LONG_FUNCTIONS',
    ).toEqual([...new Set(KNOWN_LONG_FUNCTIONS.map((f) => f.split(':')[0]!))].sort());
  });

  it('docs/ARCHITECTURE.md names every folder, and every file it names exists', () => {
    expect(unnamedFolders(), 'folders docs/ARCHITECTURE.md does not name').toEqual([]);
    expect(staleFileNames(), 'files docs/ARCHITECTURE.md names that are not in the repository').toEqual([]);
  });
});
