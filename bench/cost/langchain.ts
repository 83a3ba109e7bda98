// LangChain's summarizationMiddleware on the cost scenarios: the host of the survival bench
// (bench/survival/langchain.ts: agent state kept between calls, the hook run before every call, its
// update applied, the system prompt + state sent), with LangChain's own token counter or one that
// counts like the provider, and a scripted summary model that records what it was sent.
import type { BaseMessage } from '@langchain/core/messages';
import { RemoveMessage } from '@langchain/core/messages';
import { SimpleChatModel } from '@langchain/core/language_models/chat_models';
import { summarizationMiddleware } from 'langchain';
import { fromGuardMessages, toGuardMessages } from '../../adapters/langchain/convert.ts';
import type { GuardMessage } from '../../src/index.ts';

const SUMMARY_PREFIX = 'Here is a summary of the conversation to date:';

/**
 * The summary model: answers like the simulation's scripted summarizer (fakeSummarizer in
 * test/compaction/simulation.ts: a few lines naming what it covered, at most 1,500 characters and
 * half the guard's summary budget), so that both systems carry summaries of the same size. Records
 * the characters of every prompt it receives.
 */
export class ScriptedSummaryModel extends SimpleChatModel {
  readonly inputs: number[] = [];
  /** The summary's length cap in characters. */
  maxChars = 1500;

  _llmType(): string {
    return 'scripted-summary';
  }

  async _call(messages: BaseMessage[]): Promise<string> {
    const texts = messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
    // 12 characters of framing a message, as the fake provider counts them.
    this.inputs.push(texts.reduce((n, t) => n + t.length + 12, 0));
    const prompt = texts.join('\n');
    const lines = prompt.split('\n');
    const shown = lines.filter((l) => /^(Human|AI|Tool|System): /.test(l)).length;
    const firstUser = lines.find((l) => l.startsWith('Human: ') && !l.includes(SUMMARY_PREFIX));
    return [
      `Summary of ${shown} messages${prompt.includes(SUMMARY_PREFIX) ? ' (updating the previous summary)' : ''}.`,
      `Task: ${firstUser ? firstUser.slice('Human: '.length, 'Human: '.length + 120) : 'continuing the previous task'}.`,
      'Decisions: keep going with the plan. Next steps: continue from the latest request.',
    ]
      .join('\n')
      .slice(0, this.maxChars);
  }
}

type Hook = (state: { messages: BaseMessage[] }, runtime: unknown) => Promise<{ messages: BaseMessage[] } | undefined>;

/**
 * The survival bench's host (bench/survival/langchain.ts), with LangChain's `tokenCounter` option:
 * it keeps the agent state (what the hook removed is gone), appends each call's messages, runs the
 * hook, applies its update, and sends the system prompt + the state, as createAgent does with its
 * `systemPrompt`. Trigger `{ tokens: threshold }`; keep and trim at their defaults.
 */
export class CostLangChainHost {
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

  afterModel(reply: GuardMessage[]): void {
    this.state.push(...fromGuardMessages(reply));
  }
}
