import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Property-based and end-to-end tests replay long conversations; give them room on small CI machines.
    testTimeout: 60_000,
  },
});
