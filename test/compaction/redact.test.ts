// Redaction of secrets on their way to the summarizer and the store.
import { describe, expect, it } from 'vitest';
import { ContextGuardConfigError, createContextGuard, redactSecrets, type GuardMessage, type SummarizerInput } from '../../src/index.ts';
import { assistant, system, toolStep, user } from '../helpers.ts';

const SECRETS = {
  openai: 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789',
  anthropic: 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123',
  aws: 'AKIAIOSFODNN7EXAMPLE',
  github: 'ghp_abcdefghijklmnopqrstuvwxyz0123456789AB',
  bearer: 'Authorization: Bearer abcdef0123456789abcdef0123456789',
  key: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234\n-----END RSA PRIVATE KEY-----',
  url: 'postgres://admin:hunter2secret@db.example.com/app',
};

describe('redactSecrets', () => {
  it('masks common secret shapes and keeps the text around them', () => {
    const out = redactSecrets(`keys: ${Object.values(SECRETS).join(' | ')} end`);
    for (const secret of ['sk-proj-abc', 'sk-ant-api03', 'AKIAIOSFODNN7EXAMPLE', 'ghp_abc', 'abcdef0123456789abcdef', 'MIIEowIBAAKCAQEA1234', 'hunter2secret']) {
      expect(out).not.toContain(secret);
    }
    expect(out).toContain('Authorization: Bearer [REDACTED:bearer-token]');
    expect(out).toContain('postgres://[REDACTED:url-credentials]@db.example.com/app');
    expect(out.startsWith('keys: ')).toBe(true);
    expect(out.endsWith(' end')).toBe(true);
  });

  it('leaves ordinary text alone', () => {
    const text = 'The skeleton key-value store uses sk-tiny and Bearer auth; see https://example.com/a/b.';
    expect(redactSecrets(text)).toBe(text);
  });
});

describe('redact option', () => {
  const history = (): GuardMessage[] => [
    system('You are an agent.'),
    user(`Deploy with ${SECRETS.openai} please.`),
    ...toolStep('c1', { path: '.env' }, `OPENAI_API_KEY=${SECRETS.openai}\nAWS=${SECRETS.aws}\n${'x'.repeat(6_000)}`, 'read_file'),
    assistant('a'.repeat(6_000)),
    user('b'.repeat(6_000)),
    assistant('c'.repeat(6_000)),
    user('Now continue.'),
  ];

  it('masks secrets in everything sent to the summarizer and in the stored summary', async () => {
    const inputs: SummarizerInput[] = [];
    const guard = createContextGuard({
      contextWindow: 8_000,
      prune: false,
      summarizer: (input) => {
        inputs.push(input);
        return `## Task state\nThe user gave key ${SECRETS.anthropic}.`;
      },
    });
    const r = await guard.beforeModel({ sessionId: 's', messages: history() });
    expect(r.compaction?.strategy).toBe('summary');
    const sent = JSON.stringify(inputs);
    expect(sent).not.toContain(SECRETS.openai);
    expect(sent).not.toContain(SECRETS.aws);
    expect(sent).toContain('[REDACTED:openai-key]');
    expect(r.compaction?.summary).not.toContain(SECRETS.anthropic);
    expect(JSON.stringify(r.messages)).not.toContain(SECRETS.anthropic);
  });

  it('masks secrets in the mechanical digest', async () => {
    const guard = createContextGuard({ contextWindow: 8_000, prune: false });
    const r = await guard.beforeModel({ sessionId: 's', messages: history() });
    expect(r.compaction?.strategy).toBe('mechanical');
    expect(r.compaction?.summary).not.toContain(SECRETS.openai);
  });

  it('can be replaced or turned off', async () => {
    const seen: string[] = [];
    const custom = createContextGuard({ contextWindow: 8_000, prune: false, keepFirstUserMessage: false, redact: (t) => t.replaceAll('please', '[polite]'), summarizer: ({ prompt }) => (seen.push(prompt), 'ok') });
    await custom.beforeModel({ sessionId: 's', messages: history() });
    expect(seen.join('')).toContain('[polite]');
    expect(seen.join('')).toContain(SECRETS.openai);

    const off: string[] = [];
    const raw = createContextGuard({ contextWindow: 8_000, prune: false, redact: false, summarizer: ({ prompt }) => (off.push(prompt), 'ok') });
    await raw.beforeModel({ sessionId: 's', messages: history() });
    expect(off.join('')).toContain(SECRETS.openai);
  });

  it('rejects a redact option that is not a function or false', () => {
    expect(() => createContextGuard({ redact: true as never })).toThrow(ContextGuardConfigError);
    expect(() => createContextGuard({ redact: 'yes' as never })).toThrow(/redact/);
  });
});
