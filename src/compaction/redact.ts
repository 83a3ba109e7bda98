// Secrets must not travel further than they have to. Conversations carry API keys pasted by users,
// tokens printed by tools, private keys read from disk; a summary would copy them into a store
// (Redis, say) and into every later prompt, and a hosted summarizer would receive them. So the text
// sent to the summarizer and the summaries written to the store pass through `redact`. The default
// masks well-known secret shapes; a user's function replaces it, `redact: false` turns it off.
import type { GuardMessage } from '../messages.ts';

/** Shapes of common secrets, each with the label its mask shows. Anchored on prefixes providers document. */
const SECRET_PATTERNS: ReadonlyArray<readonly [label: string, pattern: RegExp]> = [
  // Bounded repetitions keep every pattern linear-ish on long runs without the expected ending.
  ['private-key', /-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[\s\S]{0,16384}?-----END [A-Z ]{0,40}PRIVATE KEY-----/g],
  ['anthropic-key', /\bsk-ant-[A-Za-z0-9_-]{20,}/g],
  ['openai-key', /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g],
  ['aws-access-key', /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g],
  ['github-token', /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})\b/g],
  ['slack-token', /\bxox[abprs]-[A-Za-z0-9-]{10,}/g],
  ['google-api-key', /\bAIza[0-9A-Za-z_-]{35}\b/g],
  ['stripe-key', /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}/g],
  ['jwt', /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g],
  ['bearer-token', /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/-]{16,}=*/g],
  ['url-credentials', /\b([a-z][a-z0-9+.-]{0,31}:\/\/)[^\s:/@]{1,256}:[^\s@/]{1,256}@/gi],
];

/** The default redaction: masks API keys, tokens, private keys and credentials in URLs. */
export function redactSecrets(text: string): string {
  if (typeof text !== 'string' || text.length < 16) return text;
  let out = text;
  for (const [label, pattern] of SECRET_PATTERNS) {
    out = out.replace(pattern, (match: string, prefix?: string) => {
      if (label === 'bearer-token' && prefix) return `${prefix} [REDACTED:${label}]`;
      if (label === 'url-credentials' && prefix) return `${prefix}[REDACTED:${label}]@`;
      return `[REDACTED:${label}]`;
    });
  }
  return out;
}

/** A JSON value with every string passed through `redact`. */
function redactValue(value: unknown, redact: (text: string) => string, depth = 0): unknown {
  if (typeof value === 'string') return redact(value);
  if (depth > 32 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, redact, depth + 1));
  if (Object.getPrototypeOf(value) !== Object.prototype) return value;
  const out: Record<string, unknown> = {};
  // Media payloads (base64) are not text: scanning them costs time and could mangle them.
  for (const [k, v] of Object.entries(value)) out[k] = k === 'data' || k === 'image' ? v : redactValue(v, redact, depth + 1);
  return out;
}

const TEXT_FIELDS = new Set(['text', 'value', 'input', 'reason']);

/**
 * The message with its text, tool inputs and tool outputs redacted; the same object when nothing
 * needed masking. Media data is left alone (it is not text and reaches the summarizer as a label).
 */
export function redactMessage(message: GuardMessage, redact: (text: string) => string): GuardMessage {
  const content = (message as { content?: unknown }).content;
  if (typeof content === 'string') {
    const masked = redact(content);
    return masked === content ? message : ({ ...message, content: masked } as GuardMessage);
  }
  if (!Array.isArray(content)) return message;
  let changed = false;
  const parts = content.map((part: Record<string, unknown>) => {
    if (!part || typeof part !== 'object') return part;
    const next: Record<string, unknown> = { ...part };
    for (const field of TEXT_FIELDS) if (field in next) next[field] = redactValue(next[field], redact);
    if (part['type'] === 'tool-result' && part['output'] && typeof part['output'] === 'object') {
      const output = part['output'] as Record<string, unknown>;
      next['output'] = { ...output, value: redactValue(output['value'], redact) };
    }
    // Compared as JSON: redactValue rebuilds objects even when no string changed.
    if (JSON.stringify(next) === JSON.stringify(part)) return part;
    changed = true;
    return next;
  });
  return changed ? ({ ...message, content: parts } as unknown as GuardMessage) : message;
}
