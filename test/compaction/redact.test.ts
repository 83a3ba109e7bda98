// Redaction of secrets on their way to the summarizer and the store.
import { describe, expect, it } from 'vitest';
import { redactMessage } from '../../src/compaction/redact.ts';
import { GITLEAKS_RULES } from '../../src/compaction/secret-rules.generated.ts';
import { LOCAL_RULES } from '../../src/compaction/secret-rules.ts';
import {
  ContextGuardConfigError,
  createContextGuard,
  redactSecrets,
  type GuardMessage,
  type SummarizerInput,
} from '../../src/index.ts';
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
    for (const secret of [
      'sk-proj-abc',
      'sk-ant-api03',
      'AKIAIOSFODNN7EXAMPLE',
      'ghp_abc',
      'abcdef0123456789abcdef',
      'MIIEowIBAAKCAQEA1234',
      'hunter2secret',
    ]) {
      expect(out).not.toContain(secret);
    }
    expect(out).toContain('Authorization: Bearer [REDACTED:bearer-token]');
    expect(out).toContain('postgres://[REDACTED-url-credentials]@db.example.com/app');
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
    ...toolStep(
      'c1',
      { path: '.env' },
      `OPENAI_API_KEY=${SECRETS.openai}\nAWS=${SECRETS.aws}\n${'x'.repeat(6_000)}`,
      'read_file',
    ),
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
    const custom = createContextGuard({
      contextWindow: 8_000,
      prune: false,
      keepFirstUserMessage: false,
      redact: (t) => t.replaceAll('please', '[polite]'),
      summarizer: ({ prompt }) => (seen.push(prompt), 'ok'),
    });
    await custom.beforeModel({ sessionId: 's', messages: history() });
    expect(seen.join('')).toContain('[polite]');
    expect(seen.join('')).toContain(SECRETS.openai);

    const off: string[] = [];
    const raw = createContextGuard({
      contextWindow: 8_000,
      prune: false,
      redact: false,
      summarizer: ({ prompt }) => (off.push(prompt), 'ok'),
    });
    await raw.beforeModel({ sessionId: 's', messages: history() });
    expect(off.join('')).toContain(SECRETS.openai);
  });

  it('rejects a redact option that is not a function or false', () => {
    expect(() => createContextGuard({ redact: true as never })).toThrow(ContextGuardConfigError);
    expect(() => createContextGuard({ redact: 'yes' as never })).toThrow(/redact/);
  });
});

/** Fails with the first difference and its surroundings (a megabyte diff would bury it). */
function expectSame(actual: string, expected: string): void {
  if (actual === expected) return;
  let i = 0;
  while (i < Math.min(actual.length, expected.length) && actual[i] === expected[i]) i++;
  expect({ at: i, length: actual.length, actual: actual.slice(Math.max(0, i - 40), i + 80) }).toEqual({
    at: i,
    length: expected.length,
    actual: expected.slice(Math.max(0, i - 40), i + 80),
  });
}

const MB = 1 << 20;
/** Every keyword of the scanner's rules. */
const RULE_KEYWORDS = [...new Set([...LOCAL_RULES, ...GITLEAKS_RULES].flatMap((r) => r.keywords))];
/** `unit` repeated to about 1 MB. */
const mb = (unit: string): string => unit.repeat(Math.ceil(MB / unit.length));
const times = (unit: string): number => Math.ceil(MB / unit.length);
/** About 1 MB of `unit`, and what it becomes: `unit` unchanged, or as many copies of `expectedUnit`. */
const unchanged = (unit: string): [string, string] => [mb(unit), mb(unit)];
const eachBecomes = (unit: string, expectedUnit: string): [string, string] => [
  mb(unit),
  expectedUnit.repeat(times(unit)),
];

const RSA_HEADER = '-----BEGIN RSA PRIVATE KEY-----';
const RSA_FOOTER = '-----END RSA PRIVATE KEY-----';

describe('redactSecrets on a megabyte of each shape’s worst case', () => {
  // Each input is made to trip a backtracking regex: prefixes repeated so that an attempt could
  // start at every one of them, near-misses that fail only at the end, long runs without the
  // ending a shape needs. No timing is asserted (bench/redaction.ts measures): the test must finish
  // within the test timeout, and the output must be exactly what the shapes say.
  const cases: Array<[name: string, input: string, expected: string]> = [
    ['jwt: eyJ- repeated', ...unchanged('eyJ-')],
    ['jwt: -eyJ repeated', ...unchanged('-eyJ')],
    ['jwt: segments repeated', 'eyJaaaaaaaa.'.repeat(3 * 90_000), '[REDACTED:jwt].'.repeat(90_000)],
    ['jwt: one header without a dot', `eyJ${'a'.repeat(MB)}`, `eyJ${'a'.repeat(MB)}`],
    ['jwt: unsigned tokens repeated', ...eachBecomes('eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0. ', '[REDACTED:jwt] ')],
    // A header without a body hides nothing.
    ['private-key: headers repeated', ...unchanged(RSA_HEADER)],
    [
      'private-key: headers with a body line',
      ...eachBecomes(`${RSA_HEADER}\nMIIEowIBAAKCAQEA\n`, '[REDACTED:private-key]\n'),
    ],
    [
      'private-key: whole keys repeated',
      ...eachBecomes(`${RSA_HEADER}\nMIIB\n${RSA_FOOTER}\n`, '[REDACTED:private-key]\n'),
    ],
    [
      'private-key: one header, a megabyte of body',
      `${RSA_HEADER}\n${mb('MIIEowIBAAKCAQEA+/=\n')}`,
      '[REDACTED:private-key]\n',
    ],
    ['private-key: footers repeated', ...unchanged(RSA_FOOTER)],
    ['openai-key: sk- repeated', mb('sk-'), '[REDACTED:openai-key]'],
    ['openai-key: one character short, repeated', ...unchanged(`sk-${'a'.repeat(19)} `)],
    ['anthropic-key: sk-ant- repeated', mb('sk-ant-'), '[REDACTED:anthropic-key]'],
    ['aws-access-key: AKIA repeated', ...unchanged('AKIA')],
    ['aws-access-key: keys repeated', ...eachBecomes('AKIAIOSFODNN7EXAMPLE ', '[REDACTED:aws-access-key] ')],
    ['github-token: ghp_ repeated', ...unchanged('ghp_')],
    // Not a token for the redaction's own shape (no boundary at its end); gitleaks' github-pat rule
    // has no boundary and takes its first 40 characters.
    [
      'github-token: a run with no boundary at its end',
      `ghp_${'a'.repeat(MB)}_`,
      `[REDACTED:github-pat]${'a'.repeat(MB - 36)}_`,
    ],
    ['slack-token: xoxb- repeated', mb('xoxb-'), '[REDACTED:slack-token]'],
    ['google-api-key: AIza repeated', ...unchanged('AIza')],
    ['stripe-key: sk_live_ repeated', ...unchanged('sk_live_')],
    ['bearer-token: Bearer repeated', ...unchanged('Bearer ')],
    ['bearer-token: one character short, repeated', ...unchanged(`Bearer ${'a'.repeat(15)} `)],
    [
      'bearer-token: tokens repeated',
      ...eachBecomes('Bearer abcdefghijklmnop0123 ', 'Bearer [REDACTED:bearer-token] '),
    ],
    ['url-credentials: https://a: repeated', ...unchanged('https://a:')],
    ['url-credentials: redis://: repeated', ...unchanged('redis://:')],
    ['url-credentials: credentials repeated', ...eachBecomes('https://u:p@', 'https://[REDACTED-url-credentials]@')],
    ['url-credentials: longest user and password, no @', ...unchanged(`a://${'u'.repeat(255)}:${'p'.repeat(255)} `)],
    ['secret-assignment: password= repeated', mb('password='), 'password=[REDACTED:password]'],
    [
      'secret-assignment: env lines repeated',
      ...eachBecomes('DB_PASSWORD=hunter2\n', 'DB_PASSWORD=[REDACTED:password]\n'),
    ],
    ['secret-assignment: JSON keys with empty values', ...unchanged('"password": "')],
    [
      'secret-assignment: a quoted value that never closes',
      `"password": "${'a'.repeat(MB)}`,
      `"password": "${'a'.repeat(MB)}`,
    ],
    // Each value runs from one unit's quote to the next unit's.
    [
      'secret-assignment: mixed quotes',
      `password='"\\"`.repeat(2 * 40_000),
      `password='[REDACTED:password]'"\\"`.repeat(40_000),
    ],
    ['secret-assignment: YAML keys on one line', ...unchanged('password: ')],
    ['secret-assignment: calls', ...unchanged('password=f(')],
    ['secret-assignment: flags', ...unchanged('--password ')],
    [
      'secret-assignment: JSON pairs repeated',
      ...eachBecomes('{"client_secret": "abc123"} ', '{"client_secret": "[REDACTED:secret]"} '),
    ],
    ['secret-assignment: DB_PASS= repeated', mb('DB_PASS='), 'DB_PASS=[REDACTED:password]'],
    [
      'secret-assignment: seed phrases repeated',
      ...eachBecomes('MNEMONIC=abandon ability able\n', 'MNEMONIC=[REDACTED:secret]\n'),
    ],
    ['secret-assignment: bare JSON keys with empty values', ...unchanged('"key": "')],
    // The scanner's rules (secret-rules.ts): every keyword of every rule, near-misses, keywords
    // before long runs of their alphabet.
    ['secret-rules: every keyword of every rule', ...unchanged(`${RULE_KEYWORDS.join(' ')} `)],
    ['secret-rules: glpat- repeated', ...unchanged('glpat- ')],
    ['secret-rules: gsk_ before a megabyte of its alphabet', `gsk_${'a'.repeat(MB)}`, `gsk_${'a'.repeat(MB)}`],
    ['secret-rules: AccountKey= repeated', ...unchanged('AccountKey=')],
    ['secret-rules: one character short, repeated', ...unchanged(`hf_${'a'.repeat(33)} `)],
    ['secret-header: x-api-key: repeated', ...unchanged('x-api-key: !')],
    ['long run of key characters', 'a'.repeat(MB), 'a'.repeat(MB)],
    ['long run of dashed words', ...unchanged('a-')],
  ];
  it('secret-assignment: MNEMONIC= repeated (an unquoted phrase is read 1,024 characters at most)', () => {
    const out = redactSecrets(mb('MNEMONIC='));
    expect(out.startsWith('MNEMONIC=[REDACTED:secret]')).toBe(true);
    expect(out).not.toContain('MNEMONIC='.repeat(200));
  });
  it.each(cases)('%s', (_name, input, expected) => {
    expectSame(redactSecrets(input), expected);
  });

  it('keeps beforeModel responsive when the text is in a user message or a tool-call input', async () => {
    const text = mb('eyJ-');
    for (const held of [
      [user(text), assistant('Noted.')],
      toolStep('c1', { path: 'a.txt', content: text }, 'ok', 'write_file'),
    ]) {
      const inputs: SummarizerInput[] = [];
      const guard = createContextGuard({
        contextWindow: 8_000,
        summarizer: (input) => (inputs.push(input), '## Task state\nDone.'),
      });
      const messages = [
        system('You are an agent.'),
        ...held,
        user('a '.repeat(2_000)),
        assistant('b '.repeat(2_000)),
        user('Go on.'),
      ];
      const r = await guard.beforeModel({ sessionId: 's', messages });
      expect(r.compaction?.strategy).toBe('summary');
      expect(inputs.length).toBeGreaterThan(0);
    }
  });
});

describe('redactSecrets pattern gaps', () => {
  const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
  const cases: Array<[name: string, input: string, expected: string]> = [
    [
      'AWS secret key, credentials file',
      `[p]\naws_secret_access_key = ${AWS_SECRET}\n`,
      '[p]\naws_secret_access_key = [REDACTED:aws-secret-key]\n',
    ],
    [
      'AWS secret key, environment',
      `AWS_SECRET_ACCESS_KEY=${AWS_SECRET}`,
      'AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-key]',
    ],
    [
      'AWS secret key, JSON',
      `{"aws_secret_access_key": "${AWS_SECRET}"}`,
      '{"aws_secret_access_key": "[REDACTED:aws-secret-key]"}',
    ],
    [
      'AWS secret key, YAML',
      `aws:\n  aws_secret_access_key: ${AWS_SECRET}\n`,
      'aws:\n  aws_secret_access_key: [REDACTED:aws-secret-key]\n',
    ],
    [
      'AWS temporary credentials (sts output)',
      `{"Credentials": {"AccessKeyId": "ASIAIOSFODNN7EXAMPLE", "SecretAccessKey": "${AWS_SECRET}", "SessionToken": "FwoGZXIvYXdzEBYaDH7example"}}`,
      '{"Credentials": {"AccessKeyId": "[REDACTED:aws-access-key]", "SecretAccessKey": "[REDACTED:aws-secret-key]", ' +
        '"SessionToken": "[REDACTED:token]"}}',
    ],
    [
      'URL credentials with an empty user',
      'redis://:s3cretpass@cache.internal:6379/0',
      'redis://[REDACTED-url-credentials]@cache.internal:6379/0',
    ],
    [
      'URL credentials with a user',
      'git clone https://deploy:Sup3rS3cret!@git.host/repo',
      'git clone https://[REDACTED-url-credentials]@git.host/repo',
    ],
    [
      'URL credentials with an @ in the password',
      'mongodb://app:p@ss@db:27017/x',
      'mongodb://[REDACTED-url-credentials]@db:27017/x',
    ],
    ['DB_PASSWORD=', 'DB_PASSWORD=hunter2', 'DB_PASSWORD=[REDACTED:password]'],
    [
      '*_SECRET=, *_TOKEN=, *_API_KEY=',
      'export STRIPE_WEBHOOK_SECRET=whsec_abc123\nGITHUB_TOKEN=abcdef1234567890\nMY_SERVICE_API_KEY=abc123def456',
      'export STRIPE_WEBHOOK_SECRET=[REDACTED:secret]\nGITHUB_TOKEN=[REDACTED:token]\nMY_SERVICE_API_KEY=[REDACTED:api-key]',
    ],
    ['quoted env value', 'DB_PASSWORD="hunter 2"', 'DB_PASSWORD="[REDACTED:password]"'],
    [
      'a known key keeps its own label',
      'OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789',
      'OPENAI_API_KEY=[REDACTED:openai-key]',
    ],
    [
      '"password": JSON',
      '{"user": "admin", "password": "hunter2"}',
      '{"user": "admin", "password": "[REDACTED:password]"}',
    ],
    [
      'password: YAML',
      'db:\n  user: admin\n  password: hunter2\n',
      'db:\n  user: admin\n  password: [REDACTED:password]\n',
    ],
    [
      'password: YAML list item with a comment',
      '- password: hunter2 # rotate monthly',
      '- password: [REDACTED:password] # rotate monthly',
    ],
    [
      'passwd, pwd, secret, api_key, apiKey, access_token, client_secret',
      '{"passwd": "x1", "pwd": "y2", "secret": "s3", "api_key": "k-123456789", "apiKey": "k-987654321", ' +
        '"access_token": "ya29.a0AfH6SMB", "client_secret": "cs-abcdef"}',
      '{"passwd": "[REDACTED:password]", "pwd": "[REDACTED:password]", "secret": "[REDACTED:secret]", "api_key": "[REDACTED:api-key]", ' +
        '"apiKey": "[REDACTED:api-key]", "access_token": "[REDACTED:token]", "client_secret": "[REDACTED:secret]"}',
    ],
    [
      'JSON inside a JSON string',
      String.raw`{\"password\":\"hunter2\"}`,
      String.raw`{\"password\":\"[REDACTED:password]\"}`,
    ],
    [
      'connection string',
      'Server=db;Database=app;User Id=sa;Password=hunter2;',
      'Server=db;Database=app;User Id=sa;Password=[REDACTED:password];',
    ],
    [
      'query string',
      'GET /cb?code=1&access_token=ya29.a0AfH6SMB&state=x',
      'GET /cb?code=1&access_token=[REDACTED:token]&state=x',
    ],
    [
      'command-line flags',
      'mysql --password hunter2 -u r; curl --token=abcdef12345678',
      'mysql --password [REDACTED:password] -u r; curl --token=[REDACTED:token]',
    ],
    ['HTTP header', 'X-API-Key: 3f1b9c2d7e\nAccept: */*', 'X-API-Key: [REDACTED:api-key]\nAccept: */*'],
    [
      'PGP private key block',
      '-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBF0XabcDEF+/=\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----\nafter',
      '[REDACTED:private-key]\nafter',
    ],
    [
      'encrypted PEM key with armor headers',
      `${RSA_HEADER}\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,AB12\n\nMIIEowIBAAKCAQEA\n${RSA_FOOTER}`,
      '[REDACTED:private-key]',
    ],
    [
      'private key in a service-account JSON (escaped newlines)',
      String.raw`{"private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n", "client_email": "bot@p.iam"}`,
      String.raw`{"private_key": "[REDACTED:private-key]\n", "client_email": "bot@p.iam"}`,
    ],
    [
      'private key clipped before its footer',
      '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAAAAA\n[... 1,234 characters clipped ...]',
      '[REDACTED:private-key]\n[... 1,234 characters clipped ...]',
    ],
    ['unsigned JWT', 'token eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0. end', 'token [REDACTED:jwt] end'],
    [
      'private key whose newlines became spaces (an environment variable)',
      `PRIVATE_KEY="${RSA_HEADER} MIIEowIBAAKCAQEA 1234abcd+/== ${RSA_FOOTER}"`,
      'PRIVATE_KEY="[REDACTED:private-key]"',
    ],
    [
      'private key in JSON inside a JSON string',
      String.raw`{"key": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIA\n-----END EC PRIVATE KEY-----"}`,
      '{"key": "[REDACTED:private-key]"}',
    ],
    [
      'Java properties',
      'db.url=jdbc:h2:mem\nspring.datasource.password=hunter2',
      'db.url=jdbc:h2:mem\nspring.datasource.password=[REDACTED:password]',
    ],
    ['dotted YAML key', 'app:\n  db.password: hunter2\n', 'app:\n  db.password: [REDACTED:password]\n'],
    ['short text', 'pwd=x', 'pwd=[REDACTED:password]'],
  ];
  it.each(cases)('%s', (_name, input, expected) => {
    expect(redactSecrets(input)).toBe(expected);
  });
});

describe('redactSecrets leaves ordinary prose and code alone', () => {
  const texts: Array<[name: string, text: string]> = [
    ['a TypeScript type', 'interface User {\n  password: string;\n  token?: string;\n  apiKey: string | undefined\n}'],
    [
      'code that reads a secret',
      'const token = getToken();\nconst password = await prompt("Password: ");\napi_key = os.environ["API_KEY"]',
    ],
    ['code that makes one', 'secret = secrets.token_hex(32)\nconst apiKey = crypto.randomUUID();'],
    [
      'code that passes one on',
      'this.password = password;\nconst user = { password: hashed, name };\nif (password === confirm) go(password_reset_url);',
    ],
    ['a schema', '{"type": "object", "properties": {"password": {"type": "string", "minLength": 8}}}'],
    ['prose', 'Please reset your password: the old one expired. The token: a unit of text. Keys are in the vault.'],
    [
      'tokenizer settings',
      '{"eos_token": "</s>", "pad_token": "<pad>", "mask_token": "[MASK]", "max_tokens": 4096, "prompt_tokens": 12}',
    ],
    ['references to secrets', 'password: ${{ secrets.DB_PASSWORD }}\nDB_PASSWORD=${DB_PASSWORD}\nTOKEN=$GITHUB_TOKEN'],
    ['the shell’s working directory', 'PWD=/home/alice/project\nOLDPWD=/home/alice'],
    ['a log line about a key', 'ssh: reading key -----BEGIN OPENSSH PRIVATE KEY----- (truncated)\nssh: done'],
    [
      'a key header named in prose',
      'Files that start with the header "-----BEGIN RSA PRIVATE KEY" hold a key; never paste one.',
    ],
    [
      'a URL with a port',
      'see https://example.com:8080/docs and "https://example.com:8443","contact":"bob@example.com"',
    ],
  ];
  it.each(texts)('%s', (_name, text) => {
    expect(redactSecrets(text)).toBe(text);
  });
});

describe('redactMessage', () => {
  const KEY = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';

  it('copies a cyclic tool input with the cycle marked, and masks it', () => {
    const input: Record<string, unknown> = { apiKey: KEY, nested: { list: [] as unknown[] } };
    input['self'] = input;
    (input['nested'] as { list: unknown[] }).list.push(input, 'ok');
    const message: GuardMessage = {
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'c', toolName: 't', input }],
    };
    const out = redactMessage(message, redactSecrets);
    const part = (out.content as Array<{ input: Record<string, unknown> }>)[0]!;
    expect(part.input['apiKey']).toBe('[REDACTED:openai-key]');
    expect(part.input['self']).toBe('[Circular]');
    const expected = { apiKey: '[REDACTED:openai-key]', self: '[Circular]', nested: { list: ['[Circular]', 'ok'] } };
    expect(JSON.parse(JSON.stringify(part.input))).toEqual(expected);
    expect(input['apiKey']).toBe(KEY);
  });

  it('visits a shared object once (a value referenced 2^40 times)', () => {
    let value: Record<string, unknown> = { key: `token=${KEY}` };
    for (let i = 0; i < 40; i++) value = { a: value, b: value };
    const message: GuardMessage = {
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'c', toolName: 't', input: value }],
    };
    let calls = 0;
    const out = redactMessage(message, (text) => (calls++, redactSecrets(text)));
    expect(calls).toBe(1);
    let leaf = (out.content as Array<{ input: Record<string, unknown> }>)[0]!.input;
    for (let i = 0; i < 40; i++) leaf = leaf['a'] as Record<string, unknown>;
    expect(leaf['key']).toBe('token=[REDACTED:openai-key]');
  });

  it('does not scan media payloads, and returns the same message when nothing changed', () => {
    const base64 = 'iVBORw0KGgo'.repeat(200_000);
    const message: GuardMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'Look at these.' },
        { type: 'image', image: base64, mediaType: 'image/png' },
        { type: 'image', image: new Uint8Array(2_000_000) },
        { type: 'file', data: `data:application/pdf;base64,${base64}`, mediaType: 'application/pdf' },
      ],
    };
    const tool: GuardMessage = {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c',
          toolName: 'screenshot',
          output: {
            type: 'content',
            value: [
              { type: 'text', text: 'done' },
              { type: 'image-data', data: base64, mediaType: 'image/png' },
            ],
          },
        },
      ],
    };
    const seen: number[] = [];
    const spy = (text: string) => (seen.push(text.length), redactSecrets(text));
    expect(redactMessage(message, spy)).toBe(message);
    expect(redactMessage(tool, spy)).toBe(tool);
    expect(Math.max(...seen)).toBeLessThan(100);
  });

  it('tells a media payload from text in one pass', () => {
    const nearBase64 = `iVBOR${'\n'.repeat(MB)}!`;
    const base64 = `${'iVBOR'.repeat(MB / 5)}==\n`;
    const message: GuardMessage = {
      role: 'user',
      content: [
        { type: 'image', image: nearBase64 },
        { type: 'image', image: base64 },
      ],
    };
    const seen: string[] = [];
    expect(redactMessage(message, (text) => (seen.push(text), redactSecrets(text)))).toBe(message);
    expect(seen.filter((text) => text.length > 100)).toEqual([nearBase64]);
  });

  it('masks a data field that is not media, and a denial reason', () => {
    const message: GuardMessage = {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'a',
          toolName: 'http',
          output: { type: 'json', value: { data: { password: 'hunter2', note: KEY } } },
        },
        {
          type: 'tool-result',
          toolCallId: 'b',
          toolName: 'sh',
          output: { type: 'execution-denied', reason: `refused: export TOKEN=${KEY}` },
        },
      ],
    };
    const out = JSON.stringify(redactMessage(message, redactSecrets));
    expect(out).not.toContain(KEY);
    expect(out).toContain('[REDACTED:openai-key]');
  });

  it('masks what a media part shows as text: a URL with credentials, a name, a text payload', () => {
    const message: GuardMessage = {
      role: 'user',
      content: [
        { type: 'image', image: new URL('https://deploy:Sup3rS3cret@cdn.example.com/shot.png') },
        {
          type: 'file',
          data: 'https://deploy:Sup3rS3cret@files.example.com/a.pdf',
          mediaType: 'application/pdf',
          filename: `for ${KEY}.pdf`,
        },
        { type: 'file', data: `DB_PASSWORD=hunter2\nAPI=${KEY}`, mediaType: 'text/plain' },
      ],
    };
    const out = JSON.stringify(redactMessage(message, redactSecrets));
    for (const secret of ['Sup3rS3cret', KEY, 'hunter2']) expect(out).not.toContain(secret);
    expect(out).toContain('https://[REDACTED-url-credentials]@cdn.example.com/shot.png');
  });

  it('cuts a tool input nested deeper than it walks, and one that cannot be read', () => {
    let deep: unknown = KEY;
    for (let i = 0; i < 100_000; i++) deep = { child: deep };
    const unreadable = Object.defineProperty({}, 'secret', {
      enumerable: true,
      get() {
        throw new Error('no');
      },
    });
    const message: GuardMessage = {
      role: 'assistant',
      content: [
        { type: 'tool-call', toolCallId: 'a', toolName: 't', input: deep },
        { type: 'tool-call', toolCallId: 'b', toolName: 't', input: unreadable },
      ],
    };
    const [first, second] = redactMessage(message, redactSecrets).content as Array<{ input: unknown }>;
    expect(JSON.stringify(first!.input)).toContain('[nested too deep]');
    expect(JSON.stringify(first!.input)).not.toContain(KEY);
    expect(second!.input).toBe('[unreadable]');
  });

  it('passes a message with null parts or no content through', () => {
    const odd = { role: 'user', content: [null, 'x', { type: 'text', text: KEY }] } as unknown as GuardMessage;
    const expected = '{"role":"user","content":[null,"x",{"type":"text","text":"[REDACTED:openai-key]"}]}';
    expect(JSON.stringify(redactMessage(odd, redactSecrets))).toBe(expected);
    const empty = { role: 'assistant' } as unknown as GuardMessage;
    expect(redactMessage(empty, redactSecrets)).toBe(empty);
  });
});
