// Secrets never travel further than they have to (issue 22): a maintained scanner, secretlint with
// its recommended preset run by its own engine, reads everything the guard stores, hands its
// summarizer, writes into summaries and receipts, gives back through recall and emits as events for
// a conversation full of secrets in common formats, and finds nothing. It finds them in the
// conversation itself (the test can fail). The formats the preset does not know (xAI, Azure storage
// keys, `DB_PASS=`, ...) are checked against the redaction directly.
import { lintSource } from '@secretlint/core';
import { creator as recommended } from '@secretlint/secretlint-rule-preset-recommend';
import { describe, expect, it } from 'vitest';
import { redactSecrets } from '../../src/compaction/redact.ts';
import { createContextGuard, type GuardMessage, MemoryStore, type StateStore } from '../../src/index.ts';
import { assistant, system, toolStep, user } from '../helpers.ts';

async function scan(content: string): Promise<string[]> {
  const result = await lintSource({
    source: { content, filePath: '/virtual/guard-output.txt', ext: '.txt', contentType: 'text' },
    options: {
      config: { rules: [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: recommended }] },
      noPhysicFilePath: true,
    },
  });
  return result.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

const b = (unit: string, n: number) => unit.repeat(n);
/** Secrets in the formats of the preset's rules (made up: the right shapes, no real keys). */
const SECRETS = {
  groq: `gsk_${b('a1B2c3D4e5', 5)}xY`,
  gitlab: `glpat-${'xY3_kL9-mN2pQ5rS8tU1'}`,
  huggingface: `hf_${'abcdefghijklmnopqrstuvwxyzABCDEFGH'}`,
  npm: `npm_${'a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8'}`,
  sendgrid: `SG.${'aB3dE5fG7hI9jK1lM2nO4p'}.${'qR6sT8uV0wX2yZ4aB6cD8eF0gH2iJ4kL6mN8oP0qR2s'}`,
  github: `ghp_${b('a1B2c3D4e5F6', 3)}`,
  slack: `xoxb-${'1234567890'}-${'1234567890123'}-${'aB3dE5fG7hI9jK1lM2nO4pQr'}`,
  openai: `sk-proj-${b('aB3dE5fG7h', 7)}T3BlbkFJ${b('aB3dE5fG7h', 7)}`,
  anthropic: `sk-ant-api03-${b('aB3dE5fG7h', 9)}abAA`,
  postgres: 'postgres://admin:S3cr3tPassw0rd@db.internal:5432/app',
  privateKey: `-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA${b('q1W2e3R4t5Y6', 5)}\n${b('Zx9Cv8Bn7Mm6', 5)}\n-----END RSA PRIVATE KEY-----`,
};

/** The formats of issue 22 the preset has no rule for, each in the context it is written in. */
const MORE = {
  xai: `XAI_KEY=xai-${b('Ab3dEf7hIj', 8)}`,
  azure: `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${b('aB3dE5fG7hI9jK1l', 5)}aB3d==;EndpointSuffix=core.windows.net`,
  dbPass: 'DB_PASS=hunter2-Very$ecret',
  smtpPass: 'SMTP_PASS=Sm7pP4ssw0rd!',
  rails: `SECRET_KEY_BASE=${b('a3f9', 32)}`,
  jsonKey: '{"key": "AbC123xYz789QwE456rTy0"}',
  curl: 'curl -H "x-api-key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0" https://api.example.com/v1',
  mnemonic: 'MNEMONIC="abandon ability able about above absent absorb abstract absurd abuse access accident"',
  whsec: `STRIPE_WEBHOOK_SECRET=whsec_${'aB3dE5fG7hI9jK1lM2nO4pqR6sT8uV0w'}`,
};
const MORE_VALUES = {
  xai: `xai-${b('Ab3dEf7hIj', 8)}`,
  azure: `${b('aB3dE5fG7hI9jK1l', 5)}aB3d==`,
  dbPass: 'hunter2-Very$ecret',
  smtpPass: 'Sm7pP4ssw0rd!',
  rails: b('a3f9', 32),
  jsonKey: 'AbC123xYz789QwE456rTy0',
  curl: '9f8e7d6c5b4a39281706f5e4d3c2b1a0',
  mnemonic: 'abandon ability able about',
  whsec: 'whsec_aB3dE5fG7hI9jK1lM2nO4pqR6sT8uV0w',
};

const filler = (label: string, chars: number) =>
  `${label}: ${'the build step compiles and the next step applies the same change. '.repeat(Math.ceil(chars / 60))}`.slice(
    0,
    chars,
  );

/** A conversation carrying every secret: pasted by the user, printed by tools, in tool inputs and answers. */
function conversation(): GuardMessage[] {
  const all = [...Object.values(SECRETS), ...Object.values(MORE)];
  const out: GuardMessage[] = [
    system('You are a deployment agent.'),
    user(`Set up the deploy. Here is my key: ${SECRETS.groq}`),
  ];
  all.forEach((secret, i) => {
    out.push(
      ...toolStep(
        `call_${i}`,
        { command: `deploy --token ${SECRETS.npm}`, i },
        `${filler('log', 1_200)}\n${secret}\n${filler('more', 1_200)}`,
      ),
      assistant(`Step ${i} done; the config holds ${secret}.`),
      user(`Go on with step ${i + 1}. Also: ${all[(i + 3) % all.length]}`),
    );
  });
  return out;
}

/** A store that keeps a copy of everything written to it. */
class RecordingStore<T> implements StateStore<T> {
  readonly inner = new MemoryStore<T>();
  readonly written: string[] = [];
  get(id: string) {
    return this.inner.get(id);
  }
  async set(id: string, value: T) {
    this.written.push(JSON.stringify(value));
    await this.inner.set(id, value);
  }
  delete(id: string) {
    return this.inner.delete(id);
  }
}

describe('secrets, checked by a maintained scanner (secretlint, recommended preset)', () => {
  it('finds the secrets in the conversation (the check can fail)', async () => {
    const found = await scan(JSON.stringify(conversation()));
    for (const rule of ['groq', 'gitlab', 'huggingface', 'npm', 'sendgrid', 'github', 'slack', 'privatekey'])
      expect(
        found.some((f) => f.includes(rule)),
        rule,
      ).toBe(true);
  });

  it('finds none in what the guard stores, summarizes, recalls and emits', async () => {
    const store = new RecordingStore<unknown>();
    const events: string[] = [];
    const summarizerInputs: string[] = [];
    const guard = createContextGuard({
      contextWindow: 8_000,
      store: store as StateStore<never>,
      onEvent: (e) => events.push(JSON.stringify(e)),
      // The worst summarizer: it copies everything it is given into its summary.
      summarizer: async ({ messages, previousSummary }) => {
        const input = JSON.stringify({ messages, previousSummary });
        summarizerInputs.push(input);
        return `## Task state\n${input.slice(0, 20_000)}`;
      },
    });
    const history = conversation();
    // A stateless host: the history grows, every call sends all of it.
    for (let n = 8; n <= history.length; n += 6) {
      await guard.beforeModel({ sessionId: 's', messages: history.slice(0, n) });
      await guard.afterModel({ sessionId: 's', usage: { inputTokens: 7_000 } });
    }
    const receipts = await guard.compactions('s');
    expect(receipts.length).toBeGreaterThan(0);
    const recalled: string[] = [];
    for (const query of [
      'key token secret',
      'deploy config',
      'password',
      'log more',
      'BEGIN PRIVATE KEY',
      'gsk glpat hf npm',
    ])
      recalled.push(JSON.stringify(await guard.recall('s', { query, limit: 50, maxChars: 1_000_000 })));
    for (let i = 0; i < 25; i++)
      recalled.push(JSON.stringify(await guard.recall('s', { id: `call_${i}`, maxChars: 1_000_000 })));
    expect(recalled.join('').length).toBeGreaterThan(10_000);

    const outputs = {
      stored: store.written.join('\n'),
      summarized: summarizerInputs.join('\n'),
      receipts: JSON.stringify(receipts),
      recalled: recalled.join('\n'),
      events: events.join('\n'),
    };
    for (const [what, text] of Object.entries(outputs)) {
      const found = await scan(text);
      expect(found, what).toEqual([]);
      for (const [name, value] of Object.entries(MORE_VALUES))
        expect(text.includes(value), `${what}: ${name}`).toBe(false);
    }
  });

  it('the redaction masks every format of issue 22, keeping what names it', () => {
    for (const [name, text] of Object.entries(MORE)) {
      const out = redactSecrets(text);
      expect(out, name).toContain('[REDACTED:');
      expect(out.includes(MORE_VALUES[name as keyof typeof MORE_VALUES]), name).toBe(false);
    }
    for (const [name, secret] of Object.entries(SECRETS)) {
      const out = redactSecrets(`value: ${secret}\n`);
      expect(out, name).toMatch(/\[REDACTED[:-]/);
    }
    expect(redactSecrets(MORE.dbPass)).toBe('DB_PASS=[REDACTED:password]');
    expect(redactSecrets(MORE.curl)).toBe('curl -H "x-api-key: [REDACTED:api-key]" https://api.example.com/v1');
    // Not secrets: a bypass flag, a JSON key naming a setting, prose.
    expect(redactSecrets('BYPASS=true COMPASS=north')).toBe('BYPASS=true COMPASS=north');
    expect(redactSecrets('{"key": "user-settings"}')).toBe('{"key": "user-settings"}');
    expect(redactSecrets('the x-api-key header goes in every request')).toBe(
      'the x-api-key header goes in every request',
    );
  });
});
