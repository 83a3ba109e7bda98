// The water level hard fit and the summarizer's transcript bound cut with (compaction/water-level.ts).
import { describe, expect, it } from 'vitest';
import { waterLevel } from '../../src/compaction/water-level.ts';

describe('waterLevel', () => {
  it('cuts the largest sizes to one level that saves the excess', () => {
    // 100 → 45 and 50 → 45 save 60.
    expect(waterLevel([30, 100, 50], 60, 0)).toBe(45);
  });

  it('is the largest size when nothing needs saving', () => {
    expect(waterLevel([30, 100, 50], 0, 0)).toBe(100);
  });

  it('never goes below the floor, and ignores sizes at or under it', () => {
    expect(waterLevel([1_000, 1_000], 1_900, 200)).toBe(200);
    expect(waterLevel([150, 1_000], 300, 200)).toBe(700);
    expect(waterLevel([150, 100], 10, 200)).toBe(200);
    expect(waterLevel([], 10, 200)).toBe(200);
  });

  it('is the highest level that saves the excess', () => {
    const sizes = [5_000, 120, 3_333, 800, 800, 12_345, 60, 2_000];
    const saved = (level: number) => sizes.reduce((n, s) => n + Math.max(0, s - level), 0);
    for (const excess of [1, 99, 1_000, 5_555, 10_000, 20_000]) {
      const level = waterLevel(sizes, excess, 100);
      expect(saved(level)).toBeGreaterThanOrEqual(excess);
      expect(saved(level + 1)).toBeLessThan(excess);
    }
  });
});
