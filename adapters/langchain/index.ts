// 'context-guard/langchain': the LangChain JS adapter. The callback handler, the createAgent
// middleware and the chat-model wrapper land here; until then the entry point re-exports the core
// so that the package's export map is complete and stable.
export { createContextGuard } from '../../src/index.ts';
export type { ContextGuard, ContextGuardOptions, GuardMessage } from '../../src/index.ts';
