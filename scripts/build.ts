// Builds the ESM and CommonJS outputs (each with declarations) with the TypeScript compiler.
// Two plain `tsc` runs keep the toolchain to TypeScript itself: the native TypeScript 7 compiler
// has no JavaScript API, so bundlers that load `typescript` for declarations are not an option.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';

// Run through `npm run build`, which puts node_modules/.bin (and so `tsc`) on PATH.
rmSync('dist', { recursive: true, force: true });
for (const project of ['tsconfig.build.json', 'tsconfig.cjs.json']) {
  execFileSync('tsc', ['-p', project], { stdio: 'inherit' });
}
// The package is `type: module`; this marker makes Node (and TypeScript) read dist/cjs as CommonJS.
mkdirSync('dist/cjs', { recursive: true });
writeFileSync('dist/cjs/package.json', `${JSON.stringify({ type: 'commonjs' })}\n`);
