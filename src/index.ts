// The public API of 'context-guard': the framework-neutral core.
export { createContextGuard } from './guard.ts';
export type { AfterModelInput, BeforeModelInput, BeforeModelResult, ContextGuard, ModelUsage } from './guard.ts';
export { ContextGuardConfigError, bufferTokens, thresholdFor } from './config.ts';
export type { CalibrationOptions, ContextGuardOptions, ResolvedOptions } from './config.ts';
export type * from './events.ts';
export type * from './messages.ts';
export { MemoryStore } from './state/memory.ts';
export type { MemoryStoreOptions } from './state/memory.ts';
export type { StateStore, StoreLease, StoreWriteOptions } from './state/store.ts';
export { StaleLeaseError } from './state/store.ts';
export type { SessionState, SessionStatus } from './state/session.ts';
export { matchingOverride, normalizeModelId, resolveModelInfo } from './tokens/windows.ts';
export { MIN_CONTEXT_WINDOW } from './config.ts';
export { isUsableWindow } from './call/measure.ts';
export type { ModelFamily, ModelInfo } from './tokens/windows.ts';
export { CHARS_PER_TOKEN } from './tokens/heuristic.ts';
export type { ExactCounting } from './tokens/exact.ts';
export type {
  AfterCompactContext,
  AfterCompactHook,
  BeforeCompactContext,
  BeforeCompactHook,
  CompactionReason,
  CompactionResult,
  CompactionStep,
  Summarizer,
  SummarizerInput,
} from './compaction/contract.ts';
export type * from './archive/types.ts';
export type { ArchiveOptions } from './config.ts';
export type { ClipArchiveOptions } from './compaction/policy.ts';
export type { CompactOptions, RecoverFromOverflowInput, RecoverFromOverflowResult } from './guard.ts';
export { isContextLengthError, promptTokensFromError, windowFromError } from './call/overflow.ts';
// Message-to-text helpers the adapters use (and custom hosts may: logging, their own tools).
export { formatCount, oneLine, safeJson, toolOutputText } from './compaction/text.ts';
export type { PruneOptions } from './compaction/policy.ts';
export type { FileOpsConfig } from './compaction/file-ops.ts';
export { DEFAULT_FILE_OPS } from './compaction/file-ops.ts';
export { SUMMARY_SECTIONS } from './compaction/prompt.ts';
export { redactSecrets } from './compaction/redact.ts';
export { parseRecordKey, recordKey } from './state/keys.ts';
export type { RecordKind } from './state/keys.ts';
