// The circuit breaker of the summarizer: one per guard, so that a summarizer that keeps failing is
// not called by every session's compaction until it has had time to recover.

/** Skips the summarizer for `cooldownMs` after `failures` consecutive failures (per guard). */
export class CircuitBreaker {
  private consecutive = 0;
  private openUntil = 0;
  private readonly failures: number;
  private readonly cooldownMs: number;

  constructor(failures: number, cooldownMs: number) {
    this.failures = failures;
    this.cooldownMs = cooldownMs;
  }

  get consecutiveFailures(): number {
    return this.consecutive;
  }

  /** Whether a call may be attempted now; after the cooldown one trial call is let through. */
  allows(now: number): boolean {
    return this.consecutive < this.failures || now >= this.openUntil;
  }

  success(): void {
    this.consecutive = 0;
    this.openUntil = 0;
  }

  failure(now: number): void {
    this.consecutive++;
    if (this.consecutive >= this.failures) this.openUntil = now + this.cooldownMs;
  }
}
