// Listeners of one session's events (guard.subscribe): what a live view of the context hears. Held
// per guard, at most `max` in all: a host that forgets to end its subscriptions (one per request,
// say) drops its oldest ones rather than growing without bound.
import { LRUCache } from 'lru-cache';
import type { ContextGuardEvent } from './events.ts';
import { atMostEntries } from './state/bounded.ts';

export type SessionListener = (event: ContextGuardEvent) => void;

interface Subscription {
  sessionId: string;
  listener: SessionListener;
}

export class SessionSubscriptions {
  /** Every subscription, at most `max`: past it the oldest is dropped (and leaves its session's set). */
  private readonly all: LRUCache<Subscription, true>;
  private readonly bySession = new Map<string, Set<Subscription>>();

  constructor(max: number) {
    this.all = new LRUCache({
      ...atMostEntries(max),
      disposeAfter: (_value, subscription, reason) => {
        if (reason === 'evict') this.leave(subscription);
      },
    });
  }

  /** Whether the session has a listener. */
  has(sessionId: string): boolean {
    return this.bySession.has(sessionId);
  }

  add(sessionId: string, listener: SessionListener): () => void {
    const subscription: Subscription = { sessionId, listener };
    this.all.set(subscription, true);
    let set = this.bySession.get(sessionId);
    if (!set) this.bySession.set(sessionId, (set = new Set()));
    set.add(subscription);
    return () => this.remove(subscription);
  }

  /** Hands the event to its session's listeners; a listener that throws is ignored. */
  deliver(event: ContextGuardEvent): void {
    const sessionId = (event as { sessionId?: unknown }).sessionId;
    if (typeof sessionId !== 'string') return;
    const set = this.bySession.get(sessionId);
    if (!set) return;
    // A copy: a listener may end its own subscription (or add one) while it hears the event.
    for (const subscription of [...set]) {
      try {
        subscription.listener(event);
      } catch {
        // A view of the context must never break the agent it observes.
      }
    }
  }

  private remove(subscription: Subscription): void {
    if (this.all.delete(subscription)) this.leave(subscription);
  }

  /** Takes the subscription out of its session's set. */
  private leave(subscription: Subscription): void {
    const set = this.bySession.get(subscription.sessionId);
    set?.delete(subscription);
    if (set?.size === 0) this.bySession.delete(subscription.sessionId);
  }
}
