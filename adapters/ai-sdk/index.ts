// 'context-guard/ai-sdk': the Vercel AI SDK adapter. One line around any model:
//   wrapLanguageModel({ model, middleware: contextGuardMiddleware({ contextWindow: 128_000 }) })
export { contextGuardMiddleware, contextGuardMiddlewareV3 } from './middleware.ts';
export type { ContextGuardCallOptions, ContextGuardMiddlewareOptions } from './middleware.ts';
export { compactTool } from './compact-tool.ts';
export type { CompactToolOptions } from './compact-tool.ts';
export { recallTool } from './recall-tool.ts';
export type { RecallToolOptions } from './recall-tool.ts';
export { writeContextParts } from './ui-parts.ts';
export type {
  ContextGuardCompaction,
  ContextGuardDataParts,
  ContextGuardMeter,
  ContextGuardPart,
  ContextGuardUIMessage,
  ContextPartsWriter,
  StopContextParts,
  WriteContextPartsOptions,
} from './ui-parts.ts';
export { aiSdkSummarizer } from './summarizer.ts';
export { deriveSessionId } from '../shared/session-id.ts';
export { isContextLengthError, promptTokensFromError, windowFromError } from './overflow.ts';
export { fromGuardMessages, fromGuardMessagesV3, toGuardMessages, toGuardMessagesV3, toGuardTools } from './convert.ts';
export type { GuardPrompt } from './convert.ts';
export { createContextGuard } from '../../src/index.ts';
export type { ContextGuard, ContextGuardOptions, GuardMessage } from '../../src/index.ts';
