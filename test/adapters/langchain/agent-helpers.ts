// Builders for the createAgent middleware's end-to-end tests: a recording chat model whose real
// count also covers the tools bound to it (as a provider's does), a scripted tool-calling agent
// loop, and readers of what a LangGraph checkpoint holds.
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { BaseChatModelCallOptions } from '@langchain/core/language_models/chat_models';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import type { ChatGenerationChunk, ChatResult } from '@langchain/core/outputs';
import { tool } from '@langchain/core/tools';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import type { MemorySaver } from '@langchain/langgraph';
import { z } from 'zod';
import { SUMMARY_OPEN } from '../../../src/compaction/placement.ts';
import {
  RecordingChatModel,
  promptChars,
  type RecordedCall,
  type RecordingChatModelFields,
} from './fake-chat-model.ts';

export const TOKENS_PER_CHAR = 0.3;

/** Characters of the tool definitions a request carries, as a provider serializes them. */
export function toolChars(tools: unknown): number {
  if (!Array.isArray(tools) || tools.length === 0) return 0;
  return JSON.stringify(tools.map((t) => convertToOpenAITool(t as Parameters<typeof convertToOpenAITool>[0]))).length;
}

/** The fake's own rule, over everything the request carries: messages (system included) and bound tools. */
export function requestTokens(call: RecordedCall, tokensPerChar = TOKENS_PER_CHAR, overhead = 0): number {
  return Math.ceil((promptChars(call.messages) + toolChars(call.tools)) * tokensPerChar) + overhead;
}

/**
 * RecordingChatModel whose reported `input_tokens` include the bound tools, the way a provider
 * counts them (the original counts the messages only).
 */
export class ToolCountingChatModel extends RecordingChatModel {
  private currentTools: unknown;
  private readonly perChar: number;
  private readonly overhead: number;

  constructor(fields: RecordingChatModelFields = {}) {
    super(fields);
    this.perChar = fields.tokensPerChar ?? TOKENS_PER_CHAR;
    this.overhead = fields.overheadTokens ?? 0;
  }

  override inputTokensFor(messages: readonly BaseMessage[]): number {
    return Math.ceil((promptChars(messages) + toolChars(this.currentTools)) * this.perChar) + this.overhead;
  }

  override async _generate(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): Promise<ChatResult> {
    this.currentTools = (options as BaseChatModelCallOptions & { tools?: unknown }).tools;
    return super._generate(messages, options, runManager);
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    this.currentTools = (options as BaseChatModelCallOptions & { tools?: unknown }).tools;
    yield* super._streamResponseChunks(messages, options, runManager);
  }

  /** Real tokens of each non-summarizer call, tools included. */
  requestSizes(): number[] {
    return this.modelCalls.map((c) => requestTokens(c, this.perChar, this.overhead));
  }

  get summarizerCalls(): RecordedCall[] {
    return this.calls.filter((c) => c.summarizer);
  }
}

/** A marker only the output of tool step `n` contains (never its arguments, never a summary). */
export const marker = (n: number) => `BODY<${n}>`;

export interface ScriptOptions {
  /** Tool steps before the final answer. */
  steps: number;
  /** Characters of each tool output. */
  outputChars?: number;
  /** The first tool-call number (to continue a thread with new ids). */
  first?: number;
  /** A tool call to make instead of `read` at a given step (1-based within this script). */
  special?: (step: number) => AIMessage | undefined;
  /** The final answer. */
  answer?: string;
}

/**
 * A reply function for RecordingChatModel: `steps` calls of `read`, then an answer; then it starts
 * over (one script per invoke; invokes run one after the other).
 */
export function scriptedReplies(options: ScriptOptions): (messages: BaseMessage[]) => AIMessage {
  const first = options.first ?? 1;
  let step = 0;
  return () => {
    step++;
    if (step > options.steps) {
      step = 0;
      return new AIMessage(options.answer ?? 'done');
    }
    const special = options.special?.(step);
    if (special) return special;
    const n = first + step - 1;
    return new AIMessage({
      content: `Reading part ${n}.`,
      tool_calls: [
        {
          id: `call-${n}`,
          name: 'read',
          args: { path: `src/part-${n}.ts`, size: options.outputChars ?? 1_200 },
          type: 'tool_call',
        },
      ],
    });
  };
}

/** The `read` tool: an output of `size` characters that starts with the step's marker. */
export const readTool = tool(
  async ({ path, size }: { path: string; size?: number }) => {
    const n = /part-(\d+)/.exec(path)?.[1] ?? '?';
    const chars = size ?? 1_200;
    return (
      `${marker(Number(n))} contents of ${path}\n` +
      'export const value = compute(input);\n'.repeat(Math.ceil(chars / 36))
    ).slice(0, chars);
  },
  {
    name: 'read',
    description: 'Read a source file',
    schema: z.object({ path: z.string(), size: z.number().optional() }),
  },
);

/** The messages a thread's latest checkpoint holds. */
export async function checkpointMessages(saver: MemorySaver, threadId: string): Promise<BaseMessage[]> {
  const tuple = await saver.getTuple({ configurable: { thread_id: threadId } });
  const messages = (tuple?.checkpoint.channel_values as { messages?: BaseMessage[] } | undefined)?.messages;
  return messages ?? [];
}

/** A message's text: its string content, else its text blocks. */
export const textOf = (m: BaseMessage): string => (typeof m.content === 'string' ? m.content : m.text);

export const isSummary = (m: BaseMessage): boolean => m.type === 'human' && textOf(m).startsWith(SUMMARY_OPEN);

/** The text the summarizer was asked to summarize (its user turn). */
export const summarizerPrompt = (call: RecordedCall): string => call.messages.map(textOf).join('\n');
