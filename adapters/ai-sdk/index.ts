// 'context-guard/ai-sdk': the Vercel AI SDK adapter. The language-model middleware, the compact
// tool and the summarizer helper land here; until then the entry point re-exports the core so
// that the package's export map is complete and stable.
export { createContextGuard } from '../../src/index.ts';
export type { ContextGuard, ContextGuardOptions, GuardMessage } from '../../src/index.ts';
