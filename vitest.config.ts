import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Property-based and end-to-end tests replay long conversations; give them room on small CI machines.
    testTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/browser/**'],
          sequence: { groupOrder: 0 },
        },
      },
      // The browser tests (a real Chromium) run after the rest, so that their CPU does not slow the
      // timing-bounded Redis fault and load tests on a small machine.
      { extends: true, test: { name: 'browser', include: ['test/browser/**/*.test.ts'], sequence: { groupOrder: 1 } } },
    ],
  },
});
