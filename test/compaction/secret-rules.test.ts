// The scanner's rules (secret-rules.ts) on ordinary text (issue 22: vendoring gitleaks' rules made
// redaction about 3.5 times slower on source code, 85 ms per MB against 23): a rule whose every
// match starts with one of its keywords is tried once where a keyword starts, not over the 1,152
// characters around it. `s.` (Vault's service tokens) ends half the sentences of a text, and `sk`
// (Twilio) is in `task` and `risk`: each occurrence ran its rule over a stretch, and the stretches
// covered the whole text. Counted characters, not timings (bench/redaction.ts times it).
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GITLEAKS_RULES } from '../../src/compaction/secret-rules.generated.ts';
import {
  ANCHORED_RULE_COUNT,
  LOCAL_RULES,
  literalBeginnings,
  ruleSpans,
  SECRET_RULE_COUNT,
} from '../../src/compaction/secret-rules.ts';

const RULES = [...LOCAL_RULES, ...GITLEAKS_RULES];

/** Characters of the text slices the rules' regexes were run over (the stretches around keywords). */
function stretchChars(run: () => void): number {
  const matchAll = vi.spyOn(String.prototype, 'matchAll');
  try {
    run();
    return matchAll.mock.contexts.reduce((n: number, s) => n + String(s).length, 0);
  } finally {
    vi.restoreAllMocks();
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('secret rules on ordinary text', () => {
  it('try the rules whose secrets start with their keyword only where the keyword starts', () => {
    const prose = 'The tests pass. This task has no risk. The files were read. It asks for API-level docs. '.repeat(
      1_000,
    );
    const text = `${prose}token hf_${'a'.repeat(34)} and ${'SK'}${'0123456789abcdef'.repeat(2)} end.`;
    let spans: ReturnType<typeof ruleSpans> = [];
    const scanned = stretchChars(() => {
      spans = ruleSpans(text);
    });
    // No keyword of a rule that needs a stretch around it: nothing scanned (the whole text was, once per rule).
    expect(scanned).toBe(0);
    expect(spans.map((s) => s.mask)).toEqual(['[REDACTED:huggingface-access-token]', '[REDACTED:twilio-api-key]']);
  });

  it('still run a rule whose keyword is not where its secret starts over the stretch around it', () => {
    // Azure AD client secrets: `Q~` inside the secret; a stretch of the text is read around it.
    const secret = `abc1Q~${'x'.repeat(32)}`;
    const text = `${'plain words here. '.repeat(200)}client_secret ${secret} ${'more words. '.repeat(200)}`;
    let spans: ReturnType<typeof ruleSpans> = [];
    const scanned = stretchChars(() => {
      spans = ruleSpans(text);
    });
    expect(scanned).toBeGreaterThan(0);
    expect(scanned).toBeLessThan(2_000);
    expect(spans.map((s) => text.slice(s.start, s.end))).toEqual([secret]);
  });

  it('are mostly tried at their keywords', () => {
    expect(SECRET_RULE_COUNT).toBeGreaterThan(100);
    expect(ANCHORED_RULE_COUNT).toBeGreaterThan(90);
  });
});

describe('literalBeginnings', () => {
  it('reads the literal text every match begins with', () => {
    expect(literalBeginnings('\\b(hf_(?i:[a-z]{34}))(?![\\w-])', false)).toEqual(['hf_']);
    expect(literalBeginnings('(?:ghu|ghs)_[0-9a-zA-Z]{36}', false)).toEqual(['ghu_', 'ghs_']);
    expect(literalBeginnings('xox[ar]-(?:\\d-)?[0-9a-zA-Z]{8,48}', false)).toEqual(['xoxa-', 'xoxr-']);
    expect(literalBeginnings('(?:Account|SharedAccess)Key=([a-z]{20})', true)).toEqual([
      'accountkey=',
      'sharedaccesskey=',
    ]);
    // A beginning that may be anything, or optional, is no beginning.
    expect(literalBeginnings('(?:https?://)?hooks.slack.com', false)).toEqual(['']);
    expect(literalBeginnings('[a-z]{3}\\dQ~', false)).toEqual(['']);
    expect(literalBeginnings('(?<![\\w-]|x)SK[0-9]', false)).toEqual(['sk']);
  });

  it('finds, for every rule tried only at its keywords, every match starting with one of them', () => {
    for (const rule of RULES) {
      const beginnings = literalBeginnings(rule.source, rule.flags.includes('i'));
      const anchored = beginnings?.length && beginnings.every((b) => rule.keywords.some((k) => b.startsWith(k)));
      if (!anchored) continue;
      // Strings holding matches, from the rule's own regex (its assertions left out to generate).
      const generator = new RegExp(
        rule.source
          .replace(/\(\?<?[!=](?:[^()]|\([^()]*\))*\)/g, '')
          .replace(/\\b/g, '')
          .replace(/\(\?-?i:/g, '(?:')
          .replace(/\[\[:alnum:\]\]/g, '[a-zA-Z0-9]'),
      );
      const regex = new RegExp(rule.source, `${rule.flags}g`);
      for (const text of fc.sample(fc.stringMatching(generator), { numRuns: 20, seed: 22 })) {
        for (const m of text.matchAll(regex)) {
          const at = m[0].toLowerCase();
          expect(
            rule.keywords.some((k) => at.startsWith(k)),
            `${rule.id}: ${m[0]}`,
          ).toBe(true);
        }
      }
    }
  });
});
