import { describe, expect, it, vi } from 'vitest';
import { modelsNameModel, ownedGuardWindow, reportAdapterError } from '../../../adapters/shared/model-window.ts';
import { createContextGuard, isUsableWindow, resolveModelInfo, type ContextGuardEvent } from '../../../src/index.ts';

const GPT_4O = resolveModelInfo('gpt-4o')!.contextWindow;

describe('modelsNameModel', () => {
  it('matches as the registry does: normalized ids, longest prefix at a name boundary', () => {
    expect(modelsNameModel('gpt-4o-2024-08-06', { 'gpt-4o': 30_000 })).toBe(true);
    expect(modelsNameModel('openai/gpt-4o', { 'gpt-4o': 30_000 })).toBe(true);
    expect(modelsNameModel('gpt-4o', { 'openai/gpt-4o': 30_000 })).toBe(true);
    expect(modelsNameModel('gpt-4o', { 'gpt-4': 30_000 })).toBe(false);
    expect(modelsNameModel('claude-sonnet-4', { 'gpt-4o': 30_000, other: 5_000 })).toBe(false);
  });

  it('reads no values (options not validated yet), and is false without a model or a models object', () => {
    expect(modelsNameModel('gpt-4o', { 'gpt-4o': -1 })).toBe(true);
    expect(modelsNameModel(undefined, { 'gpt-4o': 30_000 })).toBe(false);
    expect(modelsNameModel('', { '': 30_000 })).toBe(false);
    for (const models of [undefined, null, 'gpt-4o', 42]) expect(modelsNameModel('gpt-4o', models)).toBe(false);
  });
});

describe('isUsableWindow', () => {
  it('a finite number of tokens at least the minimum; not a placeholder or a fraction', () => {
    expect(isUsableWindow(1_000)).toBe(true);
    expect(isUsableWindow(200_000)).toBe(true);
    for (const window of [999, 0.5, 0, -1, Number.NaN, Number.POSITIVE_INFINITY, '8000', undefined])
      expect(isUsableWindow(window)).toBe(false);
  });
});

describe('guard.contextWindowFor', () => {
  it("the user's settings first: the guard's window, then a models entry naming the model", () => {
    expect(
      createContextGuard({ contextWindow: 9_000 }).contextWindowFor({ modelId: 'gpt-4o', contextWindow: 50_000 }),
    ).toBe(9_000);
    const guard = createContextGuard({ models: { 'gpt-4o': 30_000 } });
    expect(guard.contextWindowFor({ modelId: 'gpt-4o-2024-08-06', contextWindow: 50_000 })).toBe(30_000);
  });

  it("then the window the host declares, when usable; then the registry's", () => {
    const guard = createContextGuard();
    expect(guard.contextWindowFor({ modelId: 'gpt-4o', contextWindow: 50_000 })).toBe(50_000);
    expect(guard.contextWindowFor({ modelId: 'acme-unlisted', contextWindow: 12_000 })).toBe(12_000);
    expect(guard.contextWindowFor({ modelId: 'gpt-4o', contextWindow: 500 })).toBe(GPT_4O);
    expect(guard.contextWindowFor({ modelId: 'gpt-4o' })).toBe(GPT_4O);
    expect(guard.contextWindowFor({ contextWindow: 12_000 })).toBe(12_000);
  });

  it('undefined when nothing is known, without an event (beforeModel reports an unknown window)', () => {
    const onEvent = vi.fn();
    const guard = createContextGuard({ onEvent });
    expect(guard.contextWindowFor({ modelId: 'my-local-llm' })).toBeUndefined();
    expect(guard.contextWindowFor({})).toBeUndefined();
    expect(onEvent).not.toHaveBeenCalled();
  });

  it('given to beforeModel as the call window, gives the window beforeModel resolves from the same settings', async () => {
    const cases = [
      { options: {}, query: { modelId: 'gpt-4o', contextWindow: 50_000 } },
      { options: {}, query: { modelId: 'gpt-4o', contextWindow: 500 } },
      { options: { models: { 'gpt-4o': 30_000 } }, query: { modelId: 'gpt-4o' } },
      { options: { contextWindow: 9_000 }, query: { modelId: 'acme', contextWindow: 50_000 } },
      { options: {}, query: { modelId: 'my-local-llm' } },
    ];
    for (const { options, query } of cases) {
      const guard = createContextGuard({ ...options, onEvent: () => {} });
      const window = guard.contextWindowFor(query);
      // None known: beforeModel guards the call with the fallback window (contextWindowFor, a pure
      // look-up of the settings, answers undefined so that an adapter knows no window was declared).
      const expected = window ?? guard.options.fallbackContextWindow;
      const call = { sessionId: 's', messages: [{ role: 'user' as const, content: 'hi' }], modelId: query.modelId };
      const direct = await guard.beforeModel(call);
      const r = await guard.beforeModel({ ...call, ...(window !== undefined ? { contextWindow: window } : {}) });
      expect(r.contextWindow, JSON.stringify({ options, query })).toBe(expected);
      // Without a declared window, the result is the one beforeModel resolves by itself.
      if (query.contextWindow === undefined) expect(direct.contextWindow).toBe(expected);
    }
  });
});

describe('ownedGuardWindow', () => {
  it("the user's window; else the declared one unless a models entry names the model; a placeholder is none", () => {
    expect(ownedGuardWindow({ contextWindow: 9_000 }, { modelId: 'gpt-4o', contextWindow: 50_000 })).toBe(9_000);
    expect(ownedGuardWindow({}, { modelId: 'gpt-4o', contextWindow: 50_000 })).toBe(50_000);
    expect(
      ownedGuardWindow({ models: { 'gpt-4o': 30_000 } }, { modelId: 'gpt-4o', contextWindow: 50_000 }),
    ).toBeUndefined();
    expect(ownedGuardWindow({}, { modelId: 'gpt-4o', contextWindow: 500 })).toBeUndefined();
    expect(ownedGuardWindow({}, { modelId: 'gpt-4o' })).toBeUndefined();
  });
});

describe('reportAdapterError', () => {
  it("tells the guard's onEvent, with the session when there is one", () => {
    const events: ContextGuardEvent[] = [];
    const guard = createContextGuard({ contextWindow: 8_000, onEvent: (e) => void events.push(e) });
    const error = new TypeError('bad prompt');
    reportAdapterError(guard, { sessionId: 's1', stage: 'beforeModel', error });
    reportAdapterError(guard, { sessionId: undefined, stage: 'afterModel', error });
    expect(events).toEqual([
      { type: 'error', sessionId: 's1', stage: 'beforeModel', error },
      { type: 'error', stage: 'afterModel', error },
    ]);
  });

  it('never throws, whatever onEvent does', () => {
    const guard = createContextGuard({
      contextWindow: 8_000,
      onEvent: () => {
        throw new Error('logger down');
      },
    });
    expect(() => reportAdapterError(guard, { stage: 'beforeModel', error: new Error('x') })).not.toThrow();
    expect(() =>
      reportAdapterError(createContextGuard({ contextWindow: 8_000 }), { stage: 'beforeModel', error: 1 }),
    ).not.toThrow();
  });
});
