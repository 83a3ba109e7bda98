// Exact BPE counting with gpt-tokenizer, an option of the heuristic: a message's text is measured
// as 4 × its token count, the unit the chars/4 machinery (and calibration) already works in.
//
// Measured on real transcripts (bench/accuracy.ts, bench/exact-counting.ts): counting with o200k
// improves DeepSeek sessions clearly (pooled p95 error 1.3% → 1.1% on deepseek-chat, 2.5% → 1.0% on
// deepseek-reasoner) and does worse than calibrated chars/4 on Claude (1.0% → 1.2%), whose tokenizer
// is not public. OpenAI models use o200k / cl100k themselves, where counting is exact. So `auto`
// counts exactly for OpenAI models (their own encoding) and DeepSeek models (o200k), and keeps the
// calibrated heuristic for everything else. The encoders load lazily, on the first call that needs
// one, so users of other models never pay for their rank tables.
import { charLength, type TextLength } from './heuristic.ts';
import { resolveModelInfo, type TokenizerEncoding } from './windows.ts';

export type ExactCounting = 'auto' | 'off' | TokenizerEncoding;

/** How message text is measured for one call; `key` tells cached measures of different kinds apart. */
export interface TextMeasure {
  key: 'chars' | TokenizerEncoding;
  length: TextLength;
}

/** The plain heuristic: characters. */
export const CHARACTER_MEASURE: TextMeasure = { key: 'chars', length: charLength };
const loaded = new Map<TokenizerEncoding, Promise<TextMeasure>>();

async function load(encoding: TokenizerEncoding): Promise<TextMeasure> {
  const mod =
    encoding === 'o200k_base'
      ? await import('gpt-tokenizer/encoding/o200k_base')
      : await import('gpt-tokenizer/encoding/cl100k_base');
  // Special-token text inside a conversation is data, not a control token: count it as text (the
  // default would throw on it).
  const asText = { disallowedSpecial: new Set<string>() };
  const count = (text: string): number => mod.countTokens(text, asText);
  return { key: encoding, length: (text) => 4 * count(text) };
}

/** The encoding `mode` selects for a model, or undefined for the character heuristic. */
export function encodingFor(
  mode: ExactCounting,
  modelId: string | undefined,
  models: Readonly<Record<string, number>>,
): TokenizerEncoding | undefined {
  if (mode === 'off') return undefined;
  if (mode !== 'auto') return mode;
  const info = modelId ? resolveModelInfo(modelId, models) : undefined;
  if (info?.encoding) return info.encoding;
  return info?.family === 'deepseek' ? 'o200k_base' : undefined;
}

/** The text measure for a call; falls back to characters (and rejects) if the tokenizer cannot load. */
export function textMeasure(encoding: TokenizerEncoding | undefined): Promise<TextMeasure> {
  if (!encoding) return Promise.resolve(CHARACTER_MEASURE);
  let p = loaded.get(encoding);
  if (!p) {
    p = load(encoding);
    loaded.set(encoding, p);
    p.catch(() => loaded.delete(encoding));
  }
  return p;
}
