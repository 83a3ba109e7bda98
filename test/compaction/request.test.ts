// The latest request (compaction/request.ts): which user message is the one the model must see
// whole, and whether a prompt has anything besides it a compaction could remove.
import { describe, expect, it } from 'vitest';
import type { GuardMessage } from '../../src/index.ts';
import type { View } from '../../src/compaction/memo.ts';
import { continuationNote, rememberOwn, summaryMessage } from '../../src/compaction/placement.ts';
import { hasCompactable, requestIndex } from '../../src/compaction/request.ts';
import { assistant, system, toolStep, user } from '../helpers.ts';

describe('requestIndex', () => {
  it('is the latest user message', () => {
    expect(requestIndex([system('s'), user('a'), assistant('b'), user('c'), assistant('d')], undefined)).toBe(3);
  });

  it('looks past tool steps', () => {
    expect(requestIndex([user('a'), ...toolStep('c1', {}, 'out')], undefined)).toBe(0);
  });

  it('is -1 without any user message', () => {
    expect(requestIndex([system('s'), assistant('b')], undefined)).toBe(-1);
    expect(requestIndex([], undefined)).toBe(-1);
  });

  it('skips the summary and the continuation the guard wrote', () => {
    const summary = summaryMessage('what happened');
    const note = continuationNote();
    const own = rememberOwn(undefined, [summary, note]);
    const input = [system('s'), user('first'), summary, user('request'), note];
    expect(requestIndex(input, own)).toBe(3);
    // Recognized by their whole frame too, when the guard lost its memory of them.
    expect(requestIndex(input, undefined)).toBe(3);
  });

  it('skips an own message remembered by its text even without the frame', () => {
    const odd: GuardMessage = { role: 'user', content: '[Context Summary] written by an older version' };
    expect(requestIndex([user('request'), odd], rememberOwn(undefined, [odd]))).toBe(0);
  });

  it('takes a user’s look-alike of a summary or a continuation as a request', () => {
    const summaryLike = user('[Context Summary] here is my own summary, please use it');
    const continueLike = user('[Continue] with the refactoring');
    expect(requestIndex([user('old'), summaryLike], undefined)).toBe(1);
    expect(requestIndex([user('old'), continueLike], rememberOwn(undefined, [continuationNote()]))).toBe(1);
  });

  it('takes a user message in parts as a request', () => {
    const parts: GuardMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', image: 'aGk=', mediaType: 'image/png' },
      ],
    };
    expect(requestIndex([user('a'), parts], undefined)).toBe(1);
  });
});

/** A view whose message i comes from host message origin[i] (-1: written by the guard). */
function view(messages: GuardMessage[], origin: number[], headLength = 0): View {
  return { messages, origin, headLength, unansweredCalls: 0, orphanResults: 0 };
}

describe('hasCompactable', () => {
  it('is true when a host message other than the request and system messages is in the prompt', () => {
    expect(hasCompactable(view([system('s'), assistant('a'), user('r')], [0, 1, 2]), 2)).toBe(true);
  });

  it('is false for the smallest prompt: system messages, the guard’s summary and the request', () => {
    const smallest = view([system('s'), summaryMessage('digest'), user('r')], [0, -1, 5], 2);
    expect(hasCompactable(smallest, 5)).toBe(false);
  });

  it('counts a kept head message that is no longer the request', () => {
    // The smallest prompt kept request 5; a newer request (7) came since.
    const next = view([system('s'), user('old request'), summaryMessage('digest'), user('new')], [0, 5, -1, 7], 3);
    expect(hasCompactable(next, 7)).toBe(true);
  });

  it('is false with no request and nothing but system messages', () => {
    expect(hasCompactable(view([system('s')], [0]), -1)).toBe(false);
  });

  it('is true with no request when other host messages remain', () => {
    expect(hasCompactable(view([system('s'), assistant('a')], [0, 1]), -1)).toBe(true);
  });
});
