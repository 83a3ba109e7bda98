// A scripted LangChain chat model for the adapter's tests: it records every call (the messages it
// received, the run's tags, the tools it was bound to) and reports usage_metadata like a provider
// would (a real count that is not chars/4), so that calibration has something to learn from.
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import {
  BaseChatModel,
  type BaseChatModelCallOptions,
  type BindToolsInput,
} from '@langchain/core/language_models/chat_models';
import type { ModelProfile } from '@langchain/core/language_models/profile';
import { AIMessage, AIMessageChunk, type BaseMessage, type ToolCall } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import type { Runnable } from '@langchain/core/runnables';
import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import { SUMMARIZER_TAG } from '../../../adapters/langchain/callback-handler.ts';

export interface RecordedCall {
  messages: BaseMessage[];
  tags: string[];
  tools: unknown;
  summarizer: boolean;
}

export interface RecordingChatModelFields {
  /** The model name (`model` field), as provider integrations expose it. */
  model?: string;
  /** `profile.maxInputTokens`; no profile when undefined. */
  maxInputTokens?: number;
  /** Real tokens per character of the prompt (default 0.3: the heuristic's 0.25 is low). */
  tokensPerChar?: number;
  /** Invisible tokens the provider adds to every prompt. */
  overheadTokens?: number;
  /** The reply to a (non-summarizer) call; default: the text `ok`. */
  reply?: (messages: BaseMessage[], call: number) => AIMessage;
  /** The summarizer's answer; default: a short fixed summary. */
  summary?: (messages: BaseMessage[]) => string;
  /** Report no usage at all (as some integrations do when streaming). */
  noUsage?: boolean;
}

/** Characters of everything in a prompt, the way a provider would see it. */
export function promptChars(messages: readonly BaseMessage[]): number {
  let chars = 0;
  for (const m of messages) {
    chars += typeof m.content === 'string' ? m.content.length : JSON.stringify(m.content).length;
    const calls = (m as AIMessage).tool_calls;
    if (Array.isArray(calls)) chars += JSON.stringify(calls).length;
  }
  return chars;
}

export class RecordingChatModel extends BaseChatModel<BaseChatModelCallOptions & { tools?: unknown }> {
  model: string;
  calls: RecordedCall[] = [];
  private readonly options: RecordingChatModelFields;

  /** Tags of each run, as LangChain reports them to handlers. */
  private readonly tagsOfRun = new Map<string, string[]>();

  constructor(fields: RecordingChatModelFields = {}) {
    super({});
    // A handler of its own: it hears each run's tags (and makes LangChain always create a run manager).
    this.callbacks = [
      {
        handleChatModelStart: (_llm, _messages, runId, _parent, _extra, tags) =>
          void this.tagsOfRun.set(runId, tags ?? []),
      },
    ];
    this.options = fields;
    this.model = fields.model ?? 'recording-model';
  }

  _llmType(): string {
    return 'recording';
  }

  override get profile(): ModelProfile {
    return this.options.maxInputTokens === undefined ? {} : { maxInputTokens: this.options.maxInputTokens };
  }

  /** Calls other than the guard's own summaries. */
  get modelCalls(): RecordedCall[] {
    return this.calls.filter((c) => !c.summarizer);
  }

  /** The usage a provider would report for this prompt. */
  inputTokensFor(messages: readonly BaseMessage[]): number {
    return Math.ceil(promptChars(messages) * (this.options.tokensPerChar ?? 0.3)) + (this.options.overheadTokens ?? 0);
  }

  private respond(
    messages: BaseMessage[],
    runManager: CallbackManagerForLLMRun | undefined,
    options: this['ParsedCallOptions'],
  ): AIMessage {
    const tags = (runManager && this.tagsOfRun.get(runManager.runId)) ?? [];
    const summarizer = tags.includes(SUMMARIZER_TAG);
    this.calls.push({ messages, tags, tools: (options as { tools?: unknown }).tools, summarizer });
    const reply = summarizer
      ? new AIMessage(
          this.options.summary?.(messages) ?? 'The user asked for a report; tools were called and their results read.',
        )
      : (this.options.reply?.(messages, this.modelCalls.length - 1) ?? new AIMessage('ok'));
    if (this.options.noUsage) return reply;
    const output = Math.ceil(reply.text.length / 4) + 1;
    const input = this.inputTokensFor(messages);
    return new AIMessage({
      content: reply.content,
      tool_calls: reply.tool_calls ?? [],
      id: reply.id ?? `resp-${this.calls.length}`,
      usage_metadata: { input_tokens: input, output_tokens: output, total_tokens: input + output },
    });
  }

  async _generate(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): Promise<ChatResult> {
    const message = this.respond(messages, runManager, options);
    return { generations: [{ text: message.text, message }] };
  }

  // Streams like Anthropic: input tokens with the first chunk, output tokens with the last.
  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const message = this.respond(messages, runManager, options);
    const usage = message.usage_metadata;
    const text = message.text;
    const pieces = text.length > 1 ? [text.slice(0, 1), text.slice(1)] : [text];
    for (let i = 0; i < pieces.length; i++) {
      const first = i === 0;
      const last = i === pieces.length - 1;
      const chunk = new AIMessageChunk({
        content: pieces[i] as string,
        ...(first && usage
          ? { usage_metadata: { input_tokens: usage.input_tokens, output_tokens: 0, total_tokens: usage.input_tokens } }
          : {}),
        ...(last && usage && !first
          ? {
              usage_metadata: {
                input_tokens: 0,
                output_tokens: usage.output_tokens,
                total_tokens: usage.output_tokens,
              },
            }
          : {}),
        ...(last && message.tool_calls?.length
          ? {
              tool_call_chunks: message.tool_calls.map((c: ToolCall, index) => ({
                id: c.id,
                name: c.name,
                args: JSON.stringify(c.args),
                index,
                type: 'tool_call_chunk' as const,
              })),
            }
          : {}),
      });
      yield new ChatGenerationChunk({ message: chunk, text: pieces[i] as string });
      await runManager?.handleLLMNewToken(pieces[i] as string);
    }
  }

  override bindTools(
    tools: BindToolsInput[],
    kwargs?: Partial<BaseChatModelCallOptions>,
  ): Runnable<BaseLanguageModelInput, AIMessageChunk, BaseChatModelCallOptions & { tools?: unknown }> {
    return this.withConfig({ tools, ...kwargs }) as Runnable<
      BaseLanguageModelInput,
      AIMessageChunk,
      BaseChatModelCallOptions & { tools?: unknown }
    >;
  }
}
