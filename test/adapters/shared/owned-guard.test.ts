import { describe, expect, it, vi } from 'vitest';
import { adapterGuard, isGuardOption, latestModelSummarizer } from '../../../adapters/shared/owned-guard.ts';
import { createContextGuard, type Summarizer, type SummarizerInput } from '../../../src/index.ts';

interface AdapterOptions {
  sessionId?: string;
  retryOnOverflow?: boolean;
}

const summarizerInput = (sessionId: string) => ({ sessionId }) as SummarizerInput;

describe('isGuardOption', () => {
  it('is true for options that carry a guard', () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    expect(isGuardOption({ guard })).toBe(true);
    expect(isGuardOption({ guard, sessionId: 'x' })).toBe(true);
    for (const options of [{}, { guard: undefined }, { contextWindow: 8_000 }, null, undefined, 'guard'])
      expect(isGuardOption(options)).toBe(false);
  });
});

describe('adapterGuard', () => {
  it('an existing guard is used as it is: nothing is created, no default made', () => {
    const guard = createContextGuard({ contextWindow: 8_000 });
    const summarizer = vi.fn();
    const contextWindow = vi.fn();
    expect(
      adapterGuard<AdapterOptions>({ guard, sessionId: 's' }, ['sessionId'], { summarizer, contextWindow }),
    ).toEqual({ guard, owned: false });
    expect(summarizer).not.toHaveBeenCalled();
    expect(contextWindow).not.toHaveBeenCalled();
  });

  it("creates a guard from the core options, without the adapter's own keys (the core rejects unknown keys)", () => {
    const options = { contextWindow: 8_000, warnAt: 0.5, sessionId: 's', retryOnOverflow: false };
    const { guard, owned } = adapterGuard<AdapterOptions>(options, ['sessionId', 'retryOnOverflow'], {
      summarizer: () => async () => 'summary',
    });
    expect(owned).toBe(true);
    expect(guard.options).toMatchObject({ contextWindow: 8_000, warnAt: 0.5 });
    expect(options).toEqual({ contextWindow: 8_000, warnAt: 0.5, sessionId: 's', retryOnOverflow: false });
    expect(() =>
      adapterGuard<AdapterOptions>({ contextWindow: 8_000, sessionId: 's' }, [], { summarizer: () => async () => '' }),
    ).toThrow(/sessionId/);
  });

  it("the adapter's summarizer only when the options name none, made only then", () => {
    const own: Summarizer = async () => 'own';
    const adapters: Summarizer = async () => 'adapter';
    const made = vi.fn(() => adapters);
    expect(
      adapterGuard({ contextWindow: 8_000, summarizer: own }, [], { summarizer: made }).guard.options.summarizer,
    ).toBe(own);
    expect(made).not.toHaveBeenCalled();
    expect(adapterGuard({ contextWindow: 8_000 }, [], { summarizer: made }).guard.options.summarizer).toBe(adapters);
    expect(made).toHaveBeenCalledTimes(1);
  });

  it("the adapter's window only when the options set none", () => {
    const contextWindow = vi.fn(() => 50_000);
    const summarizer = () => async () => '';
    expect(adapterGuard({ contextWindow: 9_000 }, [], { summarizer, contextWindow }).guard.options.contextWindow).toBe(
      9_000,
    );
    expect(contextWindow).not.toHaveBeenCalled();
    expect(
      adapterGuard({ models: { acme: 2_000 } }, [], { summarizer, contextWindow }).guard.options.contextWindow,
    ).toBe(50_000);
    expect(contextWindow).toHaveBeenCalledWith({ models: { acme: 2_000 } });
    expect(
      adapterGuard({}, [], { summarizer, contextWindow: () => undefined }).guard.options.contextWindow,
    ).toBeUndefined();
  });
});

describe('latestModelSummarizer', () => {
  it("summarizes with the model of the session's latest call", async () => {
    const models = new Map([['s1', 'model-a']]);
    const summarizer = latestModelSummarizer(
      (sessionId) => models.get(sessionId),
      (model) => async () => `summary by ${model}`,
      'no model yet',
    );
    expect(await summarizer(summarizerInput('s1'))).toBe('summary by model-a');
    models.set('s1', 'model-b');
    expect(await summarizer(summarizerInput('s1'))).toBe('summary by model-b');
  });

  it('throws, saying why, for a session whose model it has not seen (the guard then uses its digest)', () => {
    const summarizer = latestModelSummarizer(
      () => undefined,
      () => async () => '',
      'no model is known for this session yet',
    );
    expect(() => summarizer(summarizerInput('restored'))).toThrow(
      'context-guard: no model is known for this session yet',
    );
  });
});
