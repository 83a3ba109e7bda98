import type {
  LanguageModelV4FunctionTool,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4ProviderTool,
} from '@ai-sdk/provider';
import type { LanguageModelV3FunctionTool, LanguageModelV3Prompt } from '@ai-sdk/provider-v3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  fromGuardMessages,
  fromGuardMessagesV3,
  toGuardMessages,
  toGuardMessagesV3,
  toGuardTools,
} from '../../../adapters/ai-sdk/convert.ts';
import { clipMessage } from '../../../src/compaction/memo.ts';
import { summaryMessage } from '../../../src/compaction/placement.ts';
import { applyToolEdits, PLACEHOLDER } from '../../../src/compaction/tool-edits.ts';
import { repairToolPairing } from '../../../src/compaction/structure.ts';
import { createContextGuard, type GuardMessage } from '../../../src/index.ts';

// A 1x1 PNG, padded so that its base64 is far longer than what the image costs.
const PNG_HEADER = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk';
const PNG = PNG_HEADER + 'A'.repeat(40_000);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Pages /Count 2 >> endobj\n%%EOF').toString('base64');
const cache = { anthropic: { cacheControl: { type: 'ephemeral' } } };
const other = { openai: { imageDetail: 'low' } };

type Obj = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Shape checks: what a provider would reject
// ---------------------------------------------------------------------------------------------

const isOptions = (v: unknown) => v === undefined || (typeof v === 'object' && v !== null && !Array.isArray(v));

function checkV4FileData(d: Obj): void {
  if (d.type === 'data') expect(typeof d.data === 'string' || d.data instanceof Uint8Array).toBe(true);
  else if (d.type === 'url') expect(d.url).toBeInstanceOf(URL);
  else if (d.type === 'reference') expect(typeof d.reference).toBe('object');
  else if (d.type === 'text') expect(typeof d.text).toBe('string');
  else throw new Error(`bad V4 file data ${JSON.stringify(d)}`);
}

function checkOutput(output: Obj, version: 3 | 4): void {
  expect(isOptions(output.providerOptions)).toBe(true);
  switch (output.type) {
    case 'text':
    case 'error-text':
      expect(typeof output.value).toBe('string');
      return;
    case 'json':
    case 'error-json':
    case 'execution-denied':
      return;
    case 'content':
      for (const item of output.value as Obj[]) {
        expect(isOptions(item.providerOptions)).toBe(true);
        if (item.type === 'text') expect(typeof item.text).toBe('string');
        else if (item.type === 'custom') continue;
        else if (version === 4) {
          expect(item.type).toBe('file');
          checkV4FileData(item.data as Obj);
          expect(typeof item.mediaType).toBe('string');
        } else if (item.type === 'image-data' || item.type === 'file-data') {
          expect(typeof item.data).toBe('string');
          expect(typeof item.mediaType).toBe('string');
        } else if (item.type === 'image-url' || item.type === 'file-url') expect(typeof item.url).toBe('string');
        else expect(['file-id', 'image-file-id']).toContain(item.type);
      }
      return;
    default:
      throw new Error(`bad output ${JSON.stringify(output)}`);
  }
}

/** Throws unless `prompt` is a structurally valid V4 (or V3) prompt. */
function checkPrompt(prompt: readonly unknown[], version: 3 | 4): void {
  const allowed: Record<string, string[]> = {
    user: ['text', 'file'],
    assistant: [
      'text',
      'file',
      'reasoning',
      'tool-call',
      'tool-result',
      ...(version === 4 ? ['custom', 'reasoning-file'] : []),
    ],
    tool: ['tool-result', 'tool-approval-response'],
  };
  for (const message of prompt as Obj[]) {
    expect(isOptions(message.providerOptions)).toBe(true);
    if (message.role === 'system') {
      expect(typeof message.content).toBe('string');
      continue;
    }
    expect(Array.isArray(message.content), `${String(message.role)} content is an array`).toBe(true);
    for (const part of message.content as Obj[]) {
      expect(allowed[message.role as string]).toContain(part.type);
      expect(isOptions(part.providerOptions)).toBe(true);
      if (part.type === 'text' || part.type === 'reasoning') expect(typeof part.text).toBe('string');
      if (part.type === 'file' || part.type === 'reasoning-file') {
        expect(typeof part.mediaType).toBe('string');
        if (version === 4) checkV4FileData(part.data as Obj);
        else
          expect(typeof part.data === 'string' || part.data instanceof Uint8Array || part.data instanceof URL).toBe(
            true,
          );
      }
      if (part.type === 'tool-call') expect(typeof part.toolCallId).toBe('string');
      if (part.type === 'tool-result') checkOutput(part.output as Obj, version);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// V4
// ---------------------------------------------------------------------------------------------

/** A V4 prompt with every part type. */
function everyPartV4(): LanguageModelV4Prompt {
  return [
    { role: 'system', content: 'You are terse.', providerOptions: cache },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Look at these.', providerOptions: cache },
        { type: 'file', data: { type: 'data', data: PNG }, mediaType: 'image/png', providerOptions: other },
        { type: 'file', data: { type: 'url', url: new URL('https://example.com/cat.jpg') }, mediaType: 'image' },
        { type: 'file', data: { type: 'data', data: PDF }, mediaType: 'application/pdf', filename: 'report.pdf' },
        {
          type: 'file',
          data: { type: 'url', url: new URL('https://example.com/doc.pdf') },
          mediaType: 'application/pdf',
        },
        { type: 'file', data: { type: 'reference', reference: { openai: 'file-abc' } }, mediaType: 'application/pdf' },
        {
          type: 'file',
          data: { type: 'text', text: 'notes.txt says hello' },
          mediaType: 'text/plain',
          filename: 'notes.txt',
        },
        {
          type: 'file',
          data: { type: 'data', data: new Uint8Array([1, 2, 3]) },
          mediaType: 'application/octet-stream',
        },
      ],
      providerOptions: cache,
    },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'Thinking.', providerOptions: { anthropic: { signature: 'sig' } } },
        { type: 'reasoning-file', data: { type: 'data', data: PNG }, mediaType: 'image/png' },
        { type: 'custom', kind: 'openai.compaction', providerOptions: { openai: { id: 'c1' } } },
        { type: 'file', data: { type: 'data', data: PNG }, mediaType: 'image/png' },
        { type: 'text', text: 'Reading.' },
        { type: 'tool-call', toolCallId: 'c1', toolName: 'read', input: { path: 'a.ts' } },
        { type: 'tool-call', toolCallId: 'c2', toolName: 'shot', input: {} },
        { type: 'tool-call', toolCallId: 'w1', toolName: 'web_search', input: { q: 'x' }, providerExecuted: true },
        { type: 'tool-result', toolCallId: 'w1', toolName: 'web_search', output: { type: 'json', value: { hits: 3 } } },
      ],
    },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'read',
          output: { type: 'text', value: 'x'.repeat(500) },
          providerOptions: cache,
        },
        {
          type: 'tool-result',
          toolCallId: 'c2',
          toolName: 'shot',
          output: {
            type: 'content',
            value: [
              { type: 'text', text: 'a screenshot' },
              { type: 'file', data: { type: 'data', data: PNG }, mediaType: 'image/png', providerOptions: other },
              {
                type: 'file',
                data: { type: 'url', url: new URL('https://example.com/log.pdf') },
                mediaType: 'application/pdf',
                filename: 'log.pdf',
              },
              { type: 'file', data: { type: 'reference', reference: { anthropic: 'file_1' } }, mediaType: 'image' },
              { type: 'file', data: { type: 'text', text: 'inline' }, mediaType: 'text/plain' },
              { type: 'custom', providerOptions: { openai: { x: 1 } } },
            ],
          },
        },
        { type: 'tool-approval-response', approvalId: 'a1', approved: false, reason: 'no' },
      ],
      providerOptions: cache,
    },
    { role: 'user', content: [{ type: 'text', text: 'Now summarize.' }] },
  ];
}

function partsOf(message: { content: unknown }): Obj[] {
  return message.content as Obj[];
}

describe('V4 prompt → guard messages', () => {
  it('hands over messages without media as they are, and rebuilds only media', () => {
    const prompt = everyPartV4();
    const { messages } = toGuardMessages(prompt);
    expect(messages).toHaveLength(prompt.length);
    expect(messages[0]).toBe(prompt[0]);
    expect(messages[4]).toBe(prompt[4]);
    // Text, reasoning, tool calls, custom parts and approval responses are the SDK's own objects.
    expect(partsOf(messages[1]!)[0]).toBe(partsOf(prompt[1]!)[0]);
    expect(partsOf(messages[2]!)[0]).toBe(partsOf(prompt[2]!)[0]);
    expect(partsOf(messages[2]!)[2]).toBe(partsOf(prompt[2]!)[2]);
    expect(partsOf(messages[3]!)[0]).toBe(partsOf(prompt[3]!)[0]);
    expect(partsOf(messages[3]!)[2]).toBe(partsOf(prompt[3]!)[2]);
  });

  it('maps images to image parts (priced as images) and files to file parts the estimator reads', () => {
    const prompt = everyPartV4();
    const { messages } = toGuardMessages(prompt);
    const user = partsOf(messages[1]!);
    expect(user[1]).toEqual({ type: 'image', image: PNG, mediaType: 'image/png', providerOptions: other });
    expect(user[2]).toEqual({ type: 'image', image: 'https://example.com/cat.jpg', mediaType: 'image' });
    expect(user[3]).toEqual({ type: 'file', data: PDF, mediaType: 'application/pdf', filename: 'report.pdf' });
    expect(user[4]).toEqual({ type: 'file', data: 'https://example.com/doc.pdf', mediaType: 'application/pdf' });
    expect(user[5]).toMatchObject({
      type: 'file',
      data: expect.stringMatching(/^[a-z-]+:.*file-abc/),
      mediaType: 'application/pdf',
    });
    expect(user[6]).toEqual({ type: 'text', text: 'notes.txt says hello' });
    const assistant = partsOf(messages[2]!);
    expect(assistant[1]).toEqual({ type: 'image', image: PNG, mediaType: 'image/png' });
    expect(assistant[3]).toEqual({ type: 'image', image: PNG, mediaType: 'image/png' });
    const items = (partsOf(messages[3]!)[1]!.output as { value: Obj[] }).value;
    expect(items[0]).toEqual({ type: 'text', text: 'a screenshot' });
    expect(items[1]).toEqual({ type: 'image-data', data: PNG, mediaType: 'image/png', providerOptions: other });
    expect(items[2]).toEqual({
      type: 'file-data',
      data: 'https://example.com/log.pdf',
      mediaType: 'application/pdf',
      filename: 'log.pdf',
    });
    expect(items[3]).toMatchObject({ type: 'image-data', mediaType: 'image/*' });
    expect(items[4]).toEqual({ type: 'text', text: 'inline' });
    expect(items[5]).toBe((partsOf(prompt[3]!)[1]!.output as { value: Obj[] }).value[5]);
  });

  it('prices a large inline image by what providers charge, not by its base64', async () => {
    const guard = createContextGuard({ contextWindow: 1_000_000 });
    const prompt: LanguageModelV4Prompt = [
      { role: 'user', content: [{ type: 'file', data: { type: 'data', data: PNG }, mediaType: 'image/png' }] },
    ];
    const r = await guard.beforeModel({ sessionId: 'img', messages: toGuardMessages(prompt).messages });
    expect(r.tokens).toBeLessThan(PNG.length / 4 / 4);
  });
});

describe('guard messages → V4 prompt', () => {
  it('returns the very same objects for every message the guard left alone', () => {
    const prompt = everyPartV4();
    const converted = toGuardMessages(prompt);
    const back = fromGuardMessages(converted.messages, converted);
    expect(back).toHaveLength(prompt.length);
    back.forEach((m, i) => expect(m).toBe(prompt[i]));
  });

  it('keeps the original parts of a message the guard copied', () => {
    const prompt = everyPartV4();
    const converted = toGuardMessages(prompt);
    const copies = converted.messages.map(
      (m) => ({ ...m, content: Array.isArray(m.content) ? [...m.content] : m.content }) as GuardMessage,
    );
    const back = fromGuardMessages(copies, converted);
    back.forEach((m, i) => {
      expect(m).toEqual(prompt[i]);
      if (Array.isArray(m.content)) m.content.forEach((p, j) => expect(p).toBe(partsOf(prompt[i]!)[j]));
    });
  });

  it('writes a summary as a user message with a text part', () => {
    const prompt = everyPartV4();
    const converted = toGuardMessages(prompt);
    const summary = summaryMessage('We read a.ts.');
    const back = fromGuardMessages([converted.messages[0]!, summary, converted.messages[4]!], converted);
    checkPrompt(back, 4);
    expect(back[1]).toEqual({ role: 'user', content: [{ type: 'text', text: summary.content }] });
    expect(back[2]).toBe(prompt[4]);
  });

  it('writes a pruned tool output as text, keeping the providerOptions of message and part', () => {
    const prompt = everyPartV4();
    const converted = toGuardMessages(prompt);
    const pruned = applyToolEdits(converted.messages[3]!, { c1: 40, c2: PLACEHOLDER });
    const back = fromGuardMessages([pruned], converted);
    checkPrompt(back, 4);
    const [tool] = back as Array<Extract<LanguageModelV4Message, { role: 'tool' }>>;
    expect(tool!.providerOptions).toBe(cache);
    const [read, shot, approval] = tool!.content;
    expect(read).toMatchObject({
      type: 'tool-result',
      toolCallId: 'c1',
      output: { type: 'text' },
      providerOptions: cache,
    });
    expect(shot).toMatchObject({
      type: 'tool-result',
      toolCallId: 'c2',
      output: { type: 'text', value: expect.stringContaining('removed') },
    });
    expect(approval).toBe(partsOf(prompt[3]!)[2]);
  });

  it('writes a clipped message with its media named, and keeps the parts it did not touch', () => {
    const prompt = everyPartV4();
    const converted = toGuardMessages(prompt);
    const back = fromGuardMessages(
      converted.messages.map((m) => clipMessage(m, 100)),
      converted,
    );
    checkPrompt(back, 4);
    const user = partsOf(back[1]!);
    expect(user[1]).toEqual({
      type: 'text',
      text: expect.stringMatching(/^\[An image was .* to fit the context window/),
    });
    expect(back[1]!.providerOptions).toBe(cache);
    const assistant = partsOf(back[2]!);
    expect(assistant[2]).toBe(partsOf(prompt[2]!)[2]); // the custom part
    expect(assistant[5]).toBe(partsOf(prompt[2]!)[5]); // a small tool call
  });

  it('writes an unanswered tool call as a text part', () => {
    const prompt: LanguageModelV4Prompt = [
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'c9', toolName: 'read', input: {} }],
        providerOptions: cache,
      },
    ];
    const converted = toGuardMessages(prompt);
    const repaired = repairToolPairing(converted.messages).messages;
    const back = fromGuardMessages(repaired, converted);
    checkPrompt(back, 4);
    expect(back[0]).toBe(prompt[0]);
    expect(back[1]).toMatchObject({
      role: 'assistant',
      content: [{ type: 'text', text: expect.stringContaining('c9') }],
      providerOptions: cache,
    });
  });

  it('converts guard media it did not make into tagged V4 file data', () => {
    const converted = toGuardMessages([]);
    const guardMessages: GuardMessage[] = [
      { role: 'assistant', content: 'plain text' },
      {
        role: 'user',
        content: [
          { type: 'image', image: PNG, providerOptions: other },
          { type: 'image', image: new URL('https://example.com/a.png'), mediaType: 'image/png' },
          { type: 'file', data: 'https://example.com/b.pdf', mediaType: 'application/pdf', filename: 'b.pdf' },
          { type: 'file', data: new Uint8Array([1]).buffer, mediaType: 'application/octet-stream' },
        ],
      },
    ];
    const back = fromGuardMessages(guardMessages, converted);
    checkPrompt(back, 4);
    expect(back[0]).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'plain text' }] });
    expect(partsOf(back[1]!)).toEqual([
      { type: 'file', data: { type: 'data', data: PNG }, mediaType: 'image', providerOptions: other },
      { type: 'file', data: { type: 'url', url: new URL('https://example.com/a.png') }, mediaType: 'image/png' },
      {
        type: 'file',
        data: { type: 'url', url: new URL('https://example.com/b.pdf') },
        mediaType: 'application/pdf',
        filename: 'b.pdf',
      },
      { type: 'file', data: { type: 'data', data: new Uint8Array([1]) }, mediaType: 'application/octet-stream' },
    ]);
  });

  it('recognizes copies the guard made without changing them: the SDK parts come back', () => {
    const prompt = everyPartV4();
    const converted = toGuardMessages(prompt);
    // Copies are not in the origins map; equal to what the guard was given, they are the parts it left alone.
    const copies = converted.messages.map((m) =>
      Array.isArray(m.content) ? ({ ...m, content: m.content.map((p: object) => ({ ...p })) } as GuardMessage) : m,
    );
    const back = fromGuardMessages(copies, converted);
    checkPrompt(back, 4);
    back.forEach((m, i) => {
      if (Array.isArray(m.content)) m.content.forEach((p, j) => expect(p).toBe(partsOf(prompt[i]!)[j]));
    });
  });

  it('restores references, URLs and data of media in a tool output the guard rebuilt', () => {
    const prompt = everyPartV4();
    const converted = toGuardMessages(prompt);
    // A new output with copied items is not the input's: it goes through the conversion by shape.
    const tool = converted.messages[3]!;
    const rebuilt = partsOf(tool).map((p) => {
      const output = p.output as { type: string; value: unknown } | undefined;
      return output?.type === 'content'
        ? { ...p, output: { ...output, value: (output.value as Obj[]).map((item) => ({ ...item })) } }
        : p;
    });
    const back = fromGuardMessages([{ ...tool, content: rebuilt } as unknown as GuardMessage], converted);
    checkPrompt(back, 4);
    const items = (partsOf(back[0]!)[1]!.output as { value: Obj[] }).value;
    const originalItems = (partsOf(prompt[3]!)[1]!.output as { value: Obj[] }).value;
    for (const i of [1, 2, 5]) expect(items[i]).toEqual(originalItems[i]);
    // The estimator tells images by an `image/` prefix, so a bare `image` comes back as its wildcard equivalent.
    expect(items[3]).toEqual({ ...originalItems[3], mediaType: 'image/*' });
  });

  it('converts a conversation the guard compacted into a valid prompt that reuses what it kept', async () => {
    const prompt: LanguageModelV4Prompt = [
      { role: 'system', content: 'You are an agent.', providerOptions: cache },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Read everything.' },
          { type: 'file', data: { type: 'data', data: PNG }, mediaType: 'image/png' },
        ],
      },
    ];
    for (let i = 0; i < 30; i++) {
      prompt.push({
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'read', input: { i } }],
      });
      prompt.push({
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: `c${i}`,
            toolName: 'read',
            output: { type: 'text', value: 'y'.repeat(3_000) },
            providerOptions: cache,
          },
        ],
      });
    }
    const guard = createContextGuard({ contextWindow: 8_000 });
    const converted = toGuardMessages(prompt);
    const r = await guard.beforeModel({ sessionId: 'compact', messages: converted.messages });
    expect(r.compaction).toBeDefined();
    const back = fromGuardMessages(r.messages, converted);
    checkPrompt(back, 4);
    expect(back[0]).toBe(prompt[0]);
    expect(back.filter((m) => prompt.includes(m)).length).toBeGreaterThan(0);
    for (const m of back) if (m.role === 'tool') expect(m.content[0]!.providerOptions).toBe(cache);
  });

  it('passes unknown parts through untouched', () => {
    const odd = { type: 'future-part', payload: { a: 1 } };
    const prompt = [{ role: 'user', content: [odd] }] as unknown as LanguageModelV4Prompt;
    const converted = toGuardMessages(prompt);
    expect(partsOf(converted.messages[0]!)[0]).toBe(odd);
    const back = fromGuardMessages([{ ...converted.messages[0]! } as GuardMessage], converted);
    expect(partsOf(back[0]!)[0]).toBe(odd);
  });
});

// ---------------------------------------------------------------------------------------------
// V3
// ---------------------------------------------------------------------------------------------

function everyPartV3(): LanguageModelV3Prompt {
  return [
    { role: 'system', content: 'You are terse.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Look.' },
        { type: 'file', data: PNG, mediaType: 'image/png', providerOptions: other, filename: 'a.png' },
        { type: 'file', data: new URL('https://example.com/cat.jpg'), mediaType: 'image/jpeg' },
        { type: 'file', data: PDF, mediaType: 'application/pdf', filename: 'report.pdf' },
      ],
      providerOptions: cache,
    },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'Thinking.' },
        { type: 'tool-call', toolCallId: 'c1', toolName: 'shot', input: {} },
      ],
    },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'shot',
          output: {
            type: 'content',
            value: [
              { type: 'text', text: 'shots' },
              { type: 'image-data', data: PNG, mediaType: 'image/png' },
              { type: 'file-data', data: PDF, mediaType: 'application/pdf', filename: 'r.pdf' },
              { type: 'image-url', url: 'https://example.com/x.png', providerOptions: other },
              { type: 'file-url', url: 'https://example.com/y.pdf', mediaType: 'application/pdf' },
              { type: 'file-id', fileId: 'file-1' },
              { type: 'image-file-id', fileId: { openai: 'file-2' } },
              { type: 'custom' },
            ],
          },
        },
        { type: 'tool-approval-response', approvalId: 'a', approved: true },
      ],
    },
  ];
}

describe('V3 (ai 6) prompts', () => {
  it('maps image file parts to image parts and reads other files as they are', () => {
    const prompt = everyPartV3();
    const { messages } = toGuardMessagesV3(prompt);
    expect(messages[0]).toBe(prompt[0]);
    expect(messages[2]).toBe(prompt[2]);
    const user = partsOf(messages[1]!);
    expect(user[1]).toEqual({ type: 'image', image: PNG, mediaType: 'image/png', providerOptions: other });
    expect(user[2]).toEqual({ type: 'image', image: new URL('https://example.com/cat.jpg'), mediaType: 'image/jpeg' });
    expect(user[3]).toBe(partsOf(prompt[1]!)[3]);
    const items = (partsOf(messages[3]!)[0]!.output as { value: Obj[] }).value;
    expect(items[1]).toBe((partsOf(prompt[3]!)[0]!.output as { value: Obj[] }).value[1]);
    expect(items[3]).toEqual({
      type: 'image-data',
      data: 'https://example.com/x.png',
      mediaType: 'image/*',
      providerOptions: other,
    });
    expect(items[4]).toEqual({ type: 'file-data', data: 'https://example.com/y.pdf', mediaType: 'application/pdf' });
    expect(items[5]).toMatchObject({ type: 'file-data', mediaType: 'application/octet-stream' });
    expect(items[6]).toMatchObject({ type: 'image-data', mediaType: 'image/*' });
  });

  it('round-trips untouched messages as the same objects, and unchanged copies to the same parts', () => {
    const prompt = everyPartV3();
    const converted = toGuardMessagesV3(prompt);
    fromGuardMessagesV3(converted.messages, converted).forEach((m, i) => expect(m).toBe(prompt[i]));
    const deepCopies = converted.messages.map((m) =>
      Array.isArray(m.content) ? ({ ...m, content: m.content.map((p: object) => ({ ...p })) } as GuardMessage) : m,
    );
    const back = fromGuardMessagesV3(deepCopies, converted);
    checkPrompt(back, 3);
    expect(partsOf(back[1]!)[1]).toBe(partsOf(prompt[1]!)[1]);
    expect(back[3]).toEqual(prompt[3]);
  });

  it('writes rewritten messages as valid V3 messages', () => {
    const prompt = everyPartV3();
    const converted = toGuardMessagesV3(prompt);
    const edited = [
      converted.messages[0]!,
      summaryMessage('done'),
      ...converted.messages.slice(1).map((m) => clipMessage(applyToolEdits(m, { c1: PLACEHOLDER }), 50)),
    ];
    const back = fromGuardMessagesV3(edited, converted);
    checkPrompt(back, 3);
    expect(back[0]).toBe(prompt[0]);
    expect(partsOf(back[4]!)[0]).toMatchObject({ type: 'tool-result', output: { type: 'text' } });
    expect(partsOf(back[4]!)[1]).toBe(partsOf(prompt[3]!)[1]);
  });

  it('converts tool definitions of ai 6 too', () => {
    const tools: LanguageModelV3FunctionTool[] = [{ type: 'function', name: 'read', inputSchema: { type: 'object' } }];
    expect(toGuardTools(tools)).toEqual([{ name: 'read', inputSchema: { type: 'object' } }]);
  });
});

// ---------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------

describe('toGuardTools', () => {
  const fn: LanguageModelV4FunctionTool = {
    type: 'function',
    name: 'read_file',
    description: 'Reads a file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    strict: true,
  };
  const provider: LanguageModelV4ProviderTool = {
    type: 'provider',
    id: 'anthropic.web_search',
    name: 'web_search',
    args: { maxUses: 3 },
  };

  it('keeps what is sent and counted: name, description and schema; a provider tool’s args', () => {
    expect(toGuardTools([fn, provider])).toEqual([
      { name: 'read_file', description: 'Reads a file.', inputSchema: fn.inputSchema },
      { name: 'web_search', inputSchema: { maxUses: 3 } },
    ]);
    expect(toGuardTools(undefined)).toBeUndefined();
  });

  it('returns the same array for the same tools array, and the same definitions for the same tools', () => {
    const tools = [fn, provider];
    const first = toGuardTools(tools);
    expect(toGuardTools(tools)).toBe(first);
    const again = toGuardTools([fn, provider]);
    expect(again).not.toBe(first);
    expect(again![0]).toBe(first![0]);
    expect(again![1]).toBe(first![1]);
  });
});

// ---------------------------------------------------------------------------------------------
// Property: random valid V4 prompts
// ---------------------------------------------------------------------------------------------

const options = fc.option(fc.constant(cache), { nil: undefined });
const withOptions = <T extends object>(arb: fc.Arbitrary<T>) =>
  fc.tuple(arb, options).map(([v, providerOptions]) => (providerOptions ? { ...v, providerOptions } : v));

const fileData = fc.oneof(
  fc.constantFrom(PNG, PDF).map((data) => ({ type: 'data' as const, data })),
  fc.uint8Array({ maxLength: 8 }).map((data) => ({ type: 'data' as const, data })),
  fc.webUrl().map((url) => ({ type: 'url' as const, url: new URL(url) })),
  fc.string().map((id) => ({ type: 'reference' as const, reference: { openai: id } })),
  fc.string().map((text) => ({ type: 'text' as const, text })),
);
const mediaType = fc.constantFrom('image/png', 'image', 'application/pdf', 'text/plain');
const text = withOptions(fc.record({ type: fc.constant('text' as const), text: fc.string() }));
const file = withOptions(
  fc.record(
    { type: fc.constant('file' as const), data: fileData, mediaType },
    { requiredKeys: ['type', 'data', 'mediaType'] },
  ),
);
const output = fc.oneof(
  fc.record({ type: fc.constant('text' as const), value: fc.string() }),
  fc.record({ type: fc.constant('json' as const), value: fc.jsonValue() }),
  fc.record({ type: fc.constant('error-text' as const), value: fc.string() }),
  fc.record({ type: fc.constant('execution-denied' as const), reason: fc.string() }),
  fc.record({
    type: fc.constant('content' as const),
    value: fc.array(
      fc.oneof(
        text,
        withOptions(fc.record({ type: fc.constant('file' as const), data: fileData, mediaType })),
        fc.constant({ type: 'custom' as const }),
      ),
    ),
  }),
);
// Few call ids, so that the guard's edits (keyed by call id) hit some results.
const callId = fc.constantFrom('a', 'b', 'c');
const toolResult = withOptions(
  fc.record({ type: fc.constant('tool-result' as const), toolCallId: callId, toolName: fc.string(), output }),
);
const assistantPart = fc.oneof(
  text,
  file,
  withOptions(fc.record({ type: fc.constant('reasoning' as const), text: fc.string() })),
  withOptions(
    fc.record({
      type: fc.constant('reasoning-file' as const),
      data: fileData.filter((d) => d.type === 'data' || d.type === 'url'),
      mediaType,
    }),
  ),
  withOptions(
    fc.record({
      type: fc.constant('tool-call' as const),
      toolCallId: callId,
      toolName: fc.string(),
      input: fc.jsonValue(),
    }),
  ),
  toolResult,
  fc.constant({ type: 'custom' as const, kind: 'openai.thing' as const }),
);
const message: fc.Arbitrary<LanguageModelV4Message> = withOptions(
  fc.oneof(
    fc.record({ role: fc.constant('system' as const), content: fc.string() }),
    fc.record({ role: fc.constant('user' as const), content: fc.array(fc.oneof(text, file)) }),
    fc.record({ role: fc.constant('assistant' as const), content: fc.array(assistantPart) }),
    fc.record({
      role: fc.constant('tool' as const),
      content: fc.array(
        fc.oneof(
          toolResult,
          fc.record({
            type: fc.constant('tool-approval-response' as const),
            approvalId: fc.string(),
            approved: fc.boolean(),
          }),
        ),
      ),
    }),
  ),
) as fc.Arbitrary<LanguageModelV4Message>;

describe('property: V4 prompt → guard → V4', () => {
  it('is the identity, object for object', () => {
    fc.assert(
      fc.property(fc.array(message, { maxLength: 8 }), (prompt) => {
        const converted = toGuardMessages(prompt);
        const back = fromGuardMessages(converted.messages, converted);
        expect(back.length).toBe(prompt.length);
        back.forEach((m, i) => expect(m).toBe(prompt[i]));
      }),
    );
  });

  it('gives valid V4 messages, with the original parts, after the guard’s edits', () => {
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 8 }),
        fc.integer({ min: 1, max: 200 }),
        callId,
        (prompt, maxChars, prunedId) => {
          const converted = toGuardMessages(prompt);
          const edits = { [prunedId]: maxChars % 2 ? PLACEHOLDER : maxChars };
          const edited = converted.messages.map((m) => clipMessage(applyToolEdits(m, edits), maxChars));
          const back = fromGuardMessages(edited, converted);
          checkPrompt(back, 4);
          // A shallow copy of each message brings back exactly the original parts.
          const copied = fromGuardMessages(
            converted.messages.map((m) => ({ ...m }) as GuardMessage),
            converted,
          );
          copied.forEach((m, i) => expect(m).toEqual(prompt[i]));
        },
      ),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Provider references to a stored or signed original
// ---------------------------------------------------------------------------------------------

/** Every provider option that points at the original a part was made from, with the options that are not references. */
function referencedOptions(n: number) {
  return {
    openai: { itemId: `msg_${n}`, phase: 'final_answer' },
    azure: { itemId: `msg_az_${n}` },
    anthropic: {
      cacheControl: { type: 'ephemeral' },
      citations: [{ type: 'web_search_result_location', encrypted_index: `e${n}` }],
    },
    google: { thoughtSignature: `ts_${n}` },
  };
}
const LONG = `The build log says: ${'step ok; '.repeat(3_000)}`;

/** A Responses-style history: a reasoning model's answer (reasoning + text + call), its result, a later answer. */
function storedHistoryV4(): LanguageModelV4Prompt {
  return [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: [{ type: 'text', text: 'Check the build.' }] },
    {
      role: 'assistant',
      content: [
        {
          type: 'reasoning',
          text: 'I should read the log.',
          providerOptions: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'enc_1' } },
        },
        { type: 'text', text: LONG, providerOptions: referencedOptions(1) },
        {
          type: 'tool-call',
          toolCallId: 'call_1',
          toolName: 'read',
          input: { path: 'log' },
          providerOptions: { openai: { itemId: 'fc_1' }, google: { thoughtSignature: 'ts_call' } },
        },
      ],
      providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } },
    },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'call_1',
          toolName: 'read',
          output: { type: 'text', value: LONG },
          providerOptions: { openai: { itemId: 'fco_1' } },
        },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'Done.', providerOptions: { anthropic: { signature: 'sig_2' } } },
        { type: 'text', text: 'All green.', providerOptions: { openai: { itemId: 'msg_2' } } },
      ],
    },
    { role: 'user', content: [{ type: 'text', text: 'Thanks, now deploy.' }] },
  ];
}

/** Every provider option key the prompt still carries, as `provider.key` per message and part. */
function optionKeys(prompt: readonly { content: unknown; providerOptions?: unknown }[]): string[][] {
  const keys = (options: unknown) =>
    Object.entries((options ?? {}) as Record<string, Obj>).flatMap(([provider, value]) =>
      Object.keys(value).map((k) => `${provider}.${k}`),
    );
  return prompt.map((m) => [
    ...keys(m.providerOptions),
    ...(Array.isArray(m.content) ? (m.content as Obj[]).flatMap((p) => keys(p.providerOptions)) : []),
  ]);
}

describe('an edit drops every provider reference to the original it changed', () => {
  it('a clipped text keeps no item id, citation or signature, and keeps the options that are not references', () => {
    const prompt = storedHistoryV4();
    const converted = toGuardMessages(prompt);
    const clipped = clipMessage(converted.messages[2]!, 2_000);
    const [back] = fromGuardMessages([clipped], converted);
    const [reasoning, text, call] = partsOf(back!);
    expect(String(text!.text).length).toBeLessThan(3_000);
    expect(text!.providerOptions).toEqual({
      openai: { phase: 'final_answer' },
      anthropic: { cacheControl: { type: 'ephemeral' } },
    });
    // The message's own options are not references (cache control): kept as they are.
    expect(back!.providerOptions).toEqual(prompt[2]!.providerOptions);
    // OpenAI's items of one response are bound together: the reasoning and the call lose their item
    // (and the encrypted reasoning) too; Google's signature of the untouched call stays.
    expect(reasoning).toEqual({ type: 'reasoning', text: 'I should read the log.' });
    expect(call!.providerOptions).toEqual({ google: { thoughtSignature: 'ts_call' } });
    expect(call).toMatchObject({ type: 'tool-call', toolCallId: 'call_1', input: { path: 'log' } });
  });

  it('an edited reasoning part loses its signature, encrypted original and redacted data', () => {
    const prompt: LanguageModelV4Prompt = [
      {
        role: 'assistant',
        content: [
          {
            type: 'reasoning',
            text: LONG,
            providerOptions: {
              anthropic: { signature: 'sig' },
              bedrock: { signature: 'bsig' },
              google: { thoughtSignature: 't' },
            },
          },
          {
            type: 'reasoning',
            text: LONG,
            providerOptions: { openai: { itemId: 'rs_9', reasoningEncryptedContent: 'enc' } },
          },
          { type: 'reasoning', text: '', providerOptions: { anthropic: { redactedData: 'opaque' } } },
          { type: 'text', text: LONG, providerOptions: { anthropic: { type: 'compaction', signature: 'csig' } } },
        ],
      },
    ];
    const converted = toGuardMessages(prompt);
    const [back] = fromGuardMessages([clipMessage(converted.messages[0]!, 1_000)], converted);
    const [signed, encrypted, redacted, compaction] = partsOf(back!);
    expect(signed).toEqual({ type: 'reasoning', text: expect.any(String) });
    expect(encrypted).toEqual({ type: 'reasoning', text: expect.any(String) });
    // Not changed by the clip (no text): the original part, signed.
    expect(redacted).toBe(partsOf(prompt[0]!)[2]);
    // A provider's compaction block the guard cut is ordinary text now.
    expect(compaction).toEqual({ type: 'text', text: expect.stringContaining('build log') });
  });

  it('a pruned or truncated tool result loses its item reference; parts the edit did not change stay the originals', () => {
    const prompt = storedHistoryV4();
    const converted = toGuardMessages(prompt);
    for (const edit of [PLACEHOLDER, 500]) {
      const back = fromGuardMessages([applyToolEdits(converted.messages[3]!, { call_1: edit })], converted);
      const [result] = partsOf(back[0]!);
      expect(result).toMatchObject({ type: 'tool-result', toolCallId: 'call_1', output: { type: 'text' } });
      expect(result!.providerOptions).toBeUndefined();
    }
    // A clip that changes nothing in a message (short texts) gives back the SDK's own parts, references and all.
    const back = fromGuardMessages([clipMessage(converted.messages[4]!, 5_000)], converted);
    partsOf(back[0]!).forEach((p, i) => expect(p).toBe(partsOf(prompt[4]!)[i]));
  });

  it('leaves the references of the messages after an edited one alone', () => {
    const prompt = storedHistoryV4();
    const converted = toGuardMessages(prompt);
    const edited = converted.messages.map((m, i) => (i === 2 ? clipMessage(m, 2_000) : m));
    const back = fromGuardMessages(edited, converted);
    for (const i of [0, 1, 3, 4, 5]) expect(back[i]).toBe(prompt[i]);
    expect(optionKeys(back)[2]).toEqual([
      'anthropic.cacheControl',
      'openai.phase',
      'anthropic.cacheControl',
      'google.thoughtSignature',
    ]);
  });

  it('a provider-executed call and its pruned result become text: the provider would send or check its stored original', () => {
    const prompt: LanguageModelV4Prompt = [
      { role: 'user', content: [{ type: 'text', text: 'Search the web.' }] },
      {
        role: 'assistant',
        content: [
          {
            type: 'tool-call',
            toolCallId: 'ws_1',
            toolName: 'web_search',
            input: { query: 'context windows' },
            providerExecuted: true,
            providerOptions: { openai: { itemId: 'ws_1' } },
          },
          {
            type: 'tool-result',
            toolCallId: 'ws_1',
            toolName: 'web_search',
            output: { type: 'json', value: [{ url: 'https://a.test', encryptedContent: 'x'.repeat(5_000) }] },
          },
          { type: 'text', text: 'Found it.' },
        ],
      },
    ];
    const converted = toGuardMessages(prompt);
    const back = fromGuardMessages(
      [converted.messages[0]!, applyToolEdits(converted.messages[1]!, { ws_1: PLACEHOLDER })],
      converted,
    );
    expect(back[0]).toBe(prompt[0]);
    const parts = partsOf(back[1]!);
    expect(parts.map((p) => p.type)).toEqual(['text', 'text', 'text']);
    expect(parts[0]!.text).toMatch(/web_search.*context windows/);
    expect(parts[1]!.text).toMatch(/web_search.*removed/);
    expect(parts[2]!.text).toBe('Found it.');
    expect(JSON.stringify(back)).not.toContain('ws_1"}');
    checkPrompt(back, 4);
  });

  it('a tool input the guard cut to a clipped JSON text is sent as an object, as providers take arguments', () => {
    const prompt: LanguageModelV4Prompt = [
      {
        role: 'assistant',
        content: [
          {
            type: 'tool-call',
            toolCallId: 'w1',
            toolName: 'write',
            input: { path: 'a.ts', content: LONG },
            providerOptions: { google: { thoughtSignature: 'ts' } },
          },
          // A freeform (custom) tool takes a string: it stays one.
          { type: 'tool-call', toolCallId: 'p1', toolName: 'patch', input: LONG },
        ],
      },
    ];
    const converted = toGuardMessages(prompt);
    const [back] = fromGuardMessages([clipMessage(converted.messages[0]!, 2_000)], converted);
    const [write, patch] = partsOf(back!);
    expect(write).toEqual({
      type: 'tool-call',
      toolCallId: 'w1',
      toolName: 'write',
      input: { input: expect.stringContaining('a.ts') },
    });
    expect(String((write!.input as Obj).input).length).toBeLessThan(3_000);
    expect(typeof patch!.input).toBe('string');
  });

  it('does the same for ai 6 (V3) prompts', () => {
    const prompt = storedHistoryV4() as unknown as LanguageModelV3Prompt;
    const converted = toGuardMessagesV3(prompt);
    const back = fromGuardMessagesV3([clipMessage(converted.messages[2]!, 2_000)], converted);
    const [reasoning, text] = partsOf(back[0]!);
    expect(reasoning!.providerOptions).toBeUndefined();
    expect(text!.providerOptions).toEqual({
      openai: { phase: 'final_answer' },
      anthropic: { cacheControl: { type: 'ephemeral' } },
    });
  });
});
