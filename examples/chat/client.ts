/// <reference lib="dom" />
// The chat page's script, on the AI SDK's own UI client: AbstractChat (what useChat wraps in React)
// with a small state that re-renders the page, and DefaultChatTransport posting to /api/chat. The
// meter is the latest `data-context-guard` part (one id: the SDK updates it in place while the
// answer streams), the compactions every `data-context-guard-compaction` part of the conversation.
import { AbstractChat, type ChatState, type ChatStatus, DefaultChatTransport } from 'ai';
import type { ContextGuardMeter, ContextGuardUIMessage } from 'context-guard/ai-sdk';

type Message = ContextGuardUIMessage;

/** ChatState for plain DOM: every change schedules one render. */
class PageState implements ChatState<Message> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: Message[] = [];
  readonly changed: () => void;
  constructor(changed: () => void) {
    this.changed = changed;
  }
  pushMessage = (message: Message) => {
    this.messages = [...this.messages, message];
    this.changed();
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
    this.changed();
  };
  replaceMessage = (index: number, message: Message) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
    this.changed();
  };
  snapshot = <T>(value: T): T => structuredClone(value);
}

class PageChat extends AbstractChat<Message> {
  readonly pageState: PageState;
  constructor(changed: () => void) {
    const state = new PageState(changed);
    super({ transport: new DefaultChatTransport<Message>({ api: '/api/chat' }), state });
    this.pageState = state;
  }
  protected override setStatus(update: { status: ChatStatus; error?: Error }): void {
    super.setStatus(update);
    this.pageState.changed();
  }
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const int = (n: number) => Math.round(n).toLocaleString('en-US');

let scheduled = false;
const chat = new PageChat(() => {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    scheduled = false;
    render();
  });
});

function textOf(message: Message): string {
  return message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
}

function latestMeter(messages: Message[]): ContextGuardMeter | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const part = messages[i]!.parts.findLast((p) => p.type === 'data-context-guard');
    if (part?.type === 'data-context-guard') return part.data;
  }
  return undefined;
}

function render(): void {
  const { messages } = chat;
  const busy = chat.status === 'submitted' || chat.status === 'streaming';
  document.body.dataset.status = chat.status;

  const list = $('messages');
  list.replaceChildren(
    ...messages.map((message) => {
      const el = document.createElement('div');
      el.className = `message ${message.role}`;
      el.dataset.testid = 'chat-message';
      el.dataset.role = message.role;
      el.textContent = textOf(message);
      return el;
    }),
  );
  list.scrollTop = list.scrollHeight;

  const meter = latestMeter(messages);
  const meterEl = $('meter');
  if (meter) {
    const percent = Math.round(meter.fraction * 100);
    meterEl.dataset.fraction = String(meter.fraction);
    meterEl.dataset.level = meter.tokens > meter.threshold ? 'over' : meter.warning ? 'warning' : 'ok';
    const strong = document.createElement('b');
    strong.textContent = `${percent}%`;
    $('meter-text').replaceChildren(strong, ' of the context window');
    $('meter-detail').textContent =
      `${int(meter.tokens)} / ${int(meter.contextWindow)} tokens (${meter.source === 'provider' ? "provider's count" : 'estimate'}); compacts above ${int(meter.threshold)}`;
    $('meter-fill').style.width = `${Math.min(100, meter.fraction * 100)}%`;
    $('meter-threshold').style.left = `${(meter.threshold / meter.contextWindow) * 100}%`;
  }

  // Each with the user message whose answer it made room for.
  let asked = 0;
  const compactions = messages.flatMap((m) => {
    if (m.role === 'user') asked++;
    return m.parts.flatMap((p) => (p.type === 'data-context-guard-compaction' ? [{ ...p.data, asked }] : []));
  });
  $('compactions').replaceChildren(
    ...compactions.map((c, i) => {
      const li = document.createElement('li');
      li.dataset.testid = 'context-compaction';
      li.textContent = `#${i + 1} ${c.label} (before answer ${c.asked})`;
      li.title = `${c.reason}: ${int(c.tokensBefore)} → ${int(c.tokensAfter)} tokens; archived as ${c.archive.join(', ') || '(archive off)'}`;
      return li;
    }),
  );
  $('no-compactions').hidden = compactions.length > 0;

  ($('send') as HTMLButtonElement).disabled = busy;
  $('error').textContent = chat.error ? chat.error.message : '';
}

$('form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = $<HTMLInputElement>('input');
  const text = input.value.trim();
  if (!text || chat.status === 'submitted' || chat.status === 'streaming') return;
  input.value = '';
  void chat.sendMessage({ text });
});
render();
