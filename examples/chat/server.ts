// A chat page that shows its context: `npm run example:chat`, then open http://localhost:3000
// (PORT sets the port). The page is built on the AI SDK's own UI client (the framework-free
// AbstractChat of `ai`, with DefaultChatTransport), bundled at start-up by rolldown; the route is a
// plain `createUIMessageStream` around `streamText`, with `writeContextParts` writing the guard's
// meter and one entry per compaction into the same stream.
//
// Offline by default: a scripted mock model whose long answers fill the example's 6,000-token window
// so that the guard compacts within about ten messages. With OPENAI_API_KEY or ANTHROPIC_API_KEY
// set, the chat runs on the real provider with the model's own window (CONTEXT_WINDOW=16000 sets a
// smaller one, to see a compaction sooner).
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import {
  convertToModelMessages,
  createUIMessageStream,
  pipeUIMessageStreamToResponse,
  streamText,
  wrapLanguageModel,
} from 'ai';
import { contextGuardMiddleware, writeContextParts, type ContextGuardUIMessage } from 'context-guard/ai-sdk';
import { build } from 'rolldown';
import { pickChatModel } from './model.ts';

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const SYSTEM = 'You are a helpful planning assistant. Answer in numbered steps.';
const MOCK_WINDOW = 6_000;

export interface ChatServerOptions {
  /** 0 for any free port. Default: PORT, else 3000. */
  port?: number;
  /** The mock model's pause between streamed chunks, in ms (default 12; 0 in tests). */
  delayMs?: number;
}

export interface ChatServer {
  url: string;
  label: string;
  server: Server;
  close(): Promise<void>;
}

/** The page's script: client.ts and the AI SDK's UI client, bundled for the browser. */
async function bundleClient(): Promise<string> {
  const out = await build({
    input: here('./client.ts'),
    platform: 'browser',
    write: false,
    logLevel: 'silent',
    output: { format: 'esm', minify: true },
  });
  return out.output[0].code;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

export async function startChatServer(options: ChatServerOptions = {}): Promise<ChatServer> {
  const picked = await pickChatModel(options.delayMs);
  const envWindow = Number(process.env.CONTEXT_WINDOW);
  const contextWindow =
    Number.isFinite(envWindow) && envWindow > 0 ? envWindow : picked.offline ? MOCK_WINDOW : undefined;
  // One guard for every chat of this process; each chat is its own session (the chat's id).
  const guarded = contextGuardMiddleware(contextWindow !== undefined ? { contextWindow } : {});
  const model = wrapLanguageModel({ model: picked.model, middleware: guarded });
  const [html, client] = await Promise.all([readFileSync(here('./index.html'), 'utf8'), bundleClient()]);

  async function chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = (await readJson(req)) as { id?: unknown; messages?: ContextGuardUIMessage[] };
    const sessionId = typeof body.id === 'string' && body.id ? body.id : 'chat';
    const messages = await convertToModelMessages(body.messages ?? []);
    const stream = createUIMessageStream<ContextGuardUIMessage>({
      execute: async ({ writer }) => {
        const stop = writeContextParts(writer, guarded, { sessionId });
        try {
          const result = streamText({
            model,
            system: SYSTEM,
            messages,
            providerOptions: { contextGuard: { sessionId } },
          });
          writer.merge(result.toUIMessageStream());
          await result.consumeStream();
        } finally {
          await stop();
        }
      },
      onError: (error) => (error instanceof Error ? error.message : String(error)),
    });
    pipeUIMessageStreamToResponse({ response: res, stream });
  }

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const send = (status: number, type: string, text: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(text);
    };
    if (req.method === 'GET' && path === '/') return send(200, 'text/html; charset=utf-8', html);
    if (req.method === 'GET' && path === '/client.js') return send(200, 'text/javascript; charset=utf-8', client);
    if (req.method === 'POST' && path === '/api/chat') {
      chat(req, res).catch((error: unknown) => {
        if (!res.headersSent) send(500, 'text/plain; charset=utf-8', String(error));
        else res.end();
      });
      return;
    }
    send(404, 'text/plain; charset=utf-8', 'not found');
  });
  const port = options.port ?? Number(process.env.PORT ?? 3000);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}/`,
    label: picked.label,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = await startChatServer();
  console.log(`context-guard chat example on ${started.url} (model: ${started.label})`);
}
