/**
 * The image pull rate limit (`registryPullQPS`, `registryBurst`): a token bucket of `burst` tokens
 * refilled at `qps` per second; a pull that finds no token fails at once with "pull QPS exceeded"
 * (ErrImagePull, then the pull backoff), as the kubelet's. qps 0 or burst 0: no limit.
 *
 * Models pkg/kubelet/images/helpers.go (throttleImagePulling, throttledImageService.PullImage) with
 * client-go's flowcontrol.NewTokenBucketRateLimiter (TryAccept).
 */
import { TokenBucket, type Clock } from '@splitlet/service';

/** The kubelet's error text for a throttled pull. */
export const PULL_QPS_EXCEEDED = 'pull QPS exceeded';

/** A non-blocking token bucket. Not shared between processes: one per node's cri-adapter. */
export class PullThrottle {
  readonly #bucket: TokenBucket | undefined;

  constructor(qps: number, burst: number, clock: Clock) {
    this.#bucket = qps > 0 && burst > 0 ? new TokenBucket(qps, Math.max(1, Math.floor(burst)), clock) : undefined;
  }

  /** Takes a token when one is there (true); never waits. Always true without a limit. */
  tryAccept(): boolean {
    return this.#bucket?.tryAccept() ?? true;
  }
}
