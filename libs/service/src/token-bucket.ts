/**
 * A token bucket as client-go's flowcontrol.NewTokenBucketRateLimiter builds it (a golang.org/x/time/rate
 * limiter): `burst` tokens, full at the start, refilled at `qps` per second. The kubelet's rate limits
 * use it both ways: the image puller takes a token or fails at once ({@link TokenBucket.tryAccept},
 * registryPullQPS), its API clients wait for theirs ({@link TokenBucket.reserve}, kubeAPIQPS and
 * eventRecordQPS).
 */
import type { Clock } from './clock.js';

export class TokenBucket {
  readonly #qps: number;
  readonly #burst: number;
  readonly #clock: Pick<Clock, 'now'>;
  #tokens: number;
  #at: number;

  /** @throws RangeError naming the value when `qps` is not a positive number or `burst` not a positive integer. */
  constructor(qps: number, burst: number, clock: Pick<Clock, 'now'>) {
    if (!(qps > 0) || !Number.isFinite(qps)) throw new RangeError(`qps must be a positive number, got ${qps}`);
    if (!Number.isInteger(burst) || burst < 1) throw new RangeError(`burst must be a positive integer, got ${burst}`);
    this.#qps = qps;
    this.#burst = burst;
    this.#clock = clock;
    this.#tokens = burst;
    this.#at = clock.now();
  }

  #refill(): void {
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + (Math.max(0, now - this.#at) / 1000) * this.#qps);
    this.#at = now;
  }

  /** Takes a token when one is there (true); never waits (TryAccept). */
  tryAccept(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /**
   * Takes a token, borrowing against the refill when none is left (Wait): how many milliseconds the
   * caller must wait before using it, 0 when one was there. Callers are served in the order they
   * asked, `1 / qps` apart once the burst is spent.
   */
  reserve(): number {
    this.#refill();
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : Math.ceil((-this.#tokens * 1000) / this.#qps);
  }
}
