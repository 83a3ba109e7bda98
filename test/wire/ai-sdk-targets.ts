// The providers the AI SDK wire tests go through, each its real package pointed at the fake of its
// API (test/wire/*.ts), and the read tool the agents call.
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { tool } from 'ai';
import { z } from 'zod';
import { fileText } from './agent.ts';
import { anthropic } from './anthropic.ts';
import type { Dialect, FakeProvider } from './fake-provider.ts';
import { google } from './google.ts';
import { openaiChat, openaiResponses } from './openai.ts';

export interface Target {
  name: string;
  dialect: Dialect;
  host: string;
  model(fetch: FakeProvider['fetch']): LanguageModelV4;
}

const apiKey = 'test-key';

export const aiSdkTargets: Target[] = [
  {
    name: 'OpenAI Chat Completions',
    dialect: openaiChat,
    host: 'api.openai.test',
    model: (fetch) => createOpenAI({ apiKey, baseURL: 'https://api.openai.test/v1', fetch }).chat('gpt-4o'),
  },
  {
    name: 'OpenAI Responses (store on)',
    dialect: openaiResponses,
    host: 'api.openai.test',
    model: (fetch) => createOpenAI({ apiKey, baseURL: 'https://api.openai.test/v1', fetch })('gpt-4o'),
  },
  {
    name: 'Anthropic',
    dialect: anthropic,
    host: 'api.anthropic.test',
    model: (fetch) => createAnthropic({ apiKey, baseURL: 'https://api.anthropic.test/v1', fetch })('claude-sonnet-4-5'),
  },
  {
    name: 'Google',
    dialect: google,
    host: 'generativelanguage.test',
    model: (fetch) =>
      createGoogleGenerativeAI({ apiKey, baseURL: 'https://generativelanguage.test/v1beta', fetch })(
        'gemini-2.5-flash',
      ),
  },
];

/** The AI SDK's read tool: a file of the repository, `chars` long (fileText's default when unset). */
export const aiSdkRead = (chars?: number) =>
  tool({
    description: 'Read a file of the repository',
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => fileText(path, chars),
  });
