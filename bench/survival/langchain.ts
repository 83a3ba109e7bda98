// LangChain's summarizationMiddleware (langchain 1.x) driven on the same sessions, for comparison.
//
// The middleware is a LangGraph `beforeModel` hook: given the agent state `{ messages }`, it returns
// nothing, or an update `[RemoveMessage(REMOVE_ALL_MESSAGES), summary, ...kept]` that replaces the
// state. This host plays the agent: it keeps the state (LangChain is stateful: what the hook
// removed is gone for good), appends each call's new messages, runs the hook, applies its update,
// and sends the system prompt + the state, as createAgent does with its `systemPrompt`.
//
// Trigger: `{ tokens: threshold }` with the guard's threshold for the window; keep and everything
// else at their defaults (keep the last 20 messages; the summarizer model sees at most the last
// 4,000 tokens of what it replaces: `trimTokensToSummarize`).
import type { BaseMessage } from '@langchain/core/messages';
import { RemoveMessage } from '@langchain/core/messages';
import { SimpleChatModel } from '@langchain/core/language_models/chat_models';
import { FakeListChatModel } from '@langchain/core/utils/testing';
import { summarizationMiddleware } from 'langchain';
import { fromGuardMessages, toGuardMessages } from '../../adapters/langchain/convert.ts';
import type { GuardMessage } from '../../src/index.ts';

const SUMMARY_PREFIX = 'Here is a summary of the conversation to date:';
/** The part of LangChain's default summary prompt the messages are rendered into. */
const OPEN = 'Messages to summarize:\n';
const CLOSE = '\n</messages>';

/**
 * A "mechanical-like" summarizer model: one line per message it is shown (LangChain renders them
 * with getBufferString: `Human: ...`, `AI: ...`, `Tool: ...`), each cut to its first 200
 * characters; a previous summary it is shown is carried over. Within `maxChars` (the guard's
 * summary budget), the oldest lines go first.
 */
export class FirstCharsChatModel extends SimpleChatModel {
  maxChars = Number.POSITIVE_INFINITY;

  _llmType(): string {
    return 'first-chars';
  }

  async _call(messages: BaseMessage[]): Promise<string> {
    const prompt = String(messages.at(-1)?.content ?? '');
    const start = prompt.indexOf(OPEN);
    const end = prompt.lastIndexOf(CLOSE);
    const body = start >= 0 && end > start ? prompt.slice(start + OPEN.length, end) : prompt;
    const entries: string[] = [];
    for (const line of body.split('\n')) {
      if (/^(Human|AI|Tool|System): /.test(line) || entries.length === 0) entries.push(line);
      else entries[entries.length - 1] += `\n${line}`;
    }
    const lines = entries.flatMap((e) =>
      e.startsWith(`Human: ${SUMMARY_PREFIX}`)
        ? e.slice(`Human: ${SUMMARY_PREFIX}`.length).trim().split('\n')
        : [`- ${e.replace(/\s+/g, ' ').slice(0, 200)}`],
    );
    let chars = lines.reduce((n, l) => n + l.length + 1, 0);
    while (chars > this.maxChars && lines.length > 1) chars -= (lines.shift() as string).length + 1;
    return lines.join('\n');
  }
}

export function headingsModel(summary: string): FakeListChatModel {
  return new FakeListChatModel({ responses: [summary] });
}

type Hook = (state: { messages: BaseMessage[] }, runtime: unknown) => Promise<{ messages: BaseMessage[] } | undefined>;

/**
 * A host that keeps LangChain agent state and runs the summarization hook before every call, with
 * LangChain's own token counter or `tokenCounter` (the cost bench's counter that counts like the provider).
 */
export class LangChainHost {
  private state: BaseMessage[] = [];
  private readonly system: GuardMessage;
  private readonly hook: Hook;

  constructor(options: {
    system: GuardMessage;
    threshold: number;
    model: unknown;
    tokenCounter?: (messages: BaseMessage[]) => number;
  }) {
    this.system = options.system;
    const middleware = summarizationMiddleware({
      model: options.model as never,
      trigger: { tokens: options.threshold },
      ...(options.tokenCounter ? { tokenCounter: options.tokenCounter } : {}),
    });
    const hook = middleware.beforeModel as unknown;
    this.hook = (typeof hook === 'function' ? hook : (hook as { hook: Hook }).hook) as Hook;
  }

  /** Appends the call's messages, runs the hook; returns the prompt and whether it summarized. */
  async beforeModel(added: GuardMessage[]): Promise<{ messages: GuardMessage[]; compacted: boolean }> {
    this.state.push(...fromGuardMessages(added));
    const update = await this.hook({ messages: this.state }, { context: {} });
    let compacted = false;
    if (update?.messages) {
      this.state = update.messages.filter((m) => !RemoveMessage.isInstance(m));
      compacted = true;
    }
    return { messages: [this.system, ...toGuardMessages(this.state)], compacted };
  }

  /** Appends the model's answer: one message, or a step's messages. */
  afterModel(reply: GuardMessage | GuardMessage[]): void {
    this.state.push(...fromGuardMessages(Array.isArray(reply) ? reply : [reply]));
  }
}
