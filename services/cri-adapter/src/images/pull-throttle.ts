/**
 * The image pull rate limit (`registryPullQPS`, `registryBurst`): a token bucket of `burst` tokens
 * refilled at `qps` per second; a pull that finds no token fails at once with "pull QPS exceeded"
 * (ErrImagePull, then the pull backoff), as the kubelet's. qps 0 or burst 0: no limit.
 *
 * Models pkg/kubelet/images/helpers.go (throttleImagePulling, throttledImageService.PullImage) with
 * client-go's flowcontrol.NewTokenBucketRateLimiter (TryAccept).
 */
import type { Clock } from '@splitlet/service';

/** The kubelet's error text for a throttled pull. */
export const PULL_QPS_EXCEEDED = 'pull QPS exceeded';

/** A non-blocking token bucket. Not shared between processes: one per node's cri-adapter. */
export class PullThrottle {
  readonly #qps: number;
  readonly #burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #last: number;

  constructor(qps: number, burst: number, clock: Clock) {
    this.#qps = qps;
    this.#burst = burst;
    this.#clock = clock;
    this.#tokens = burst;
    this.#last = clock.now();
  }

  /** Takes a token when one is there (true); never waits. Always true without a limit. */
  tryAccept(): boolean {
    if (this.#qps <= 0 || this.#burst <= 0) return true;
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#last) / 1000) * this.#qps);
    this.#last = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
