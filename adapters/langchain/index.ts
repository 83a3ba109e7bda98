// 'context-guard/langchain': the LangChain JS adapter, in the three places LangChain users look:
// a createAgent middleware, a guarded chat model, and a callback handler for hand-written loops.
export { contextGuardMiddleware } from './agent-middleware.ts';
export type { ContextGuardAgentMiddlewareOptions } from './agent-middleware.ts';
export type {
  ContextGuardCompaction,
  ContextGuardDataParts,
  ContextGuardMeter,
  ContextGuardPart,
} from '../shared/context-parts.ts';
export { withContextGuard, GuardedChatModel } from './with-context-guard.ts';
export type { SessionIdOption, WithContextGuardOptions } from './with-context-guard.ts';
export { ContextGuardCallbackHandler, SUMMARIZER_TAG, usageFromLLMResult } from './callback-handler.ts';
export type { ContextGuardCallbackHandlerOptions, LLMRunInfo } from './callback-handler.ts';
export { langchainSummarizer } from './summarizer.ts';
export type { LangchainSummarizerOptions } from './summarizer.ts';
export { compactTool } from './compact-tool.ts';
export type { CompactToolOptions } from './compact-tool.ts';
export { recallTool } from './recall-tool.ts';
export type { RecallToolOptions } from './recall-tool.ts';
export { fromGuardMessages, toGuardMessages, toGuardTools } from './convert.ts';
export { createContextGuard } from '../../src/index.ts';
export type { ContextGuard, ContextGuardOptions, GuardMessage } from '../../src/index.ts';
