// LangChain's summarizationMiddleware on the cost scenarios runs in the survival bench's host
// (bench/survival/langchain.ts: agent state kept between calls, the hook run before every call, its
// update applied, the system prompt + state sent), with LangChain's own token counter or one that
// counts like the provider; here, the scripted summary model that records what it was sent.
import type { BaseMessage } from '@langchain/core/messages';
import { SimpleChatModel } from '@langchain/core/language_models/chat_models';

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
