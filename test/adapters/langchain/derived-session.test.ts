// createAgent without a thread_id: the session id is derived from the conversation's start, and the
// middleware's own compaction rewrites that start (the first request summarized with its images).
// The run must stay one session all the same, or its calibration and summary are spread over
// throwaway sessions.
import { HumanMessage } from '@langchain/core/messages';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { contextGuardMiddleware } from '../../../adapters/langchain/agent-middleware.ts';
import { recorder } from '../../helpers.ts';
import { pngBase64 } from '../../png.ts';
import { readTool, scriptedReplies, ToolCountingChatModel } from './agent-helpers.ts';

describe('createAgent without a thread_id', () => {
  it('keeps one derived session through the compactions that rewrite the first request', async () => {
    const ev = recorder();
    const model = new ToolCountingChatModel({ reply: scriptedReplies({ steps: 10, outputChars: 2000 }) });
    const agent = createAgent({
      model,
      tools: [readTool],
      middleware: [contextGuardMiddleware({ contextWindow: 8000, onEvent: ev.onEvent })],
    });
    const first = new HumanMessage({
      content: [
        { type: 'text', text: 'Here are screenshots of the bug. Read the sources and find the cause.' },
        ...[1, 2, 3].map((i) => ({
          type: 'image_url',
          image_url: { url: `data:image/png;base64,${pngBase64(1500, 1500, 20_000 + i)}` },
        })),
      ],
    });
    await agent.invoke({ messages: [first] }, { recursionLimit: 100 });
    expect(ev.of('compaction-end').length).toBeGreaterThan(0);
    const sessions = new Set(
      ev.events.map((e) => (e as { sessionId?: string }).sessionId).filter((s) => s !== undefined),
    );
    expect([...sessions]).toHaveLength(1);
  });
});
