/**
 * The kubelet's client-side rate limits on the API server (KubeletConfiguration kubeAPIQPS /
 * kubeAPIBurst for its main client, eventRecordQPS / eventBurst for its event client; 50 / 100 each).
 * client-go builds a token bucket per client (flowcontrol.NewTokenBucketRateLimiter, a
 * golang.org/x/time/rate limiter) and every request waits for its token before it is sent: a burst
 * of pods is reported to the API server at that rate, never dropped, and the status manager's
 * per-pod coalescing means a pod whose patch waited sends its newest status.
 */
import { realClock, type Clock, type TokenBucket } from '@splitlet/service';
import type { KubeRest, KubeWatch } from './kube-rest.js';

/** Where a rate-limited request's wait is reported (client-go's rest_client_rate_limiter_duration_seconds). */
export type RateLimiterObserver = (verb: string, waitedSeconds: number) => void;

/**
 * A request that must wait is sent at the next multiple of this many milliseconds after its token is
 * due (clock-aligned, so the requests of both clients due in one window go together). Later than its
 * token, never earlier: the rate stays within the limit. At 50 a second that is 5 requests every
 * 100 ms instead of one every 20 ms — on these machines a process woken from idle pays several
 * times the CPU of one kept busy, and the API server, its watchers (config-source, status-manager's
 * pod copy) and the bus wake once for the 5. A request with a token at hand is sent at once.
 */
export const RATE_LIMIT_WINDOW_MS = 100;

/** Options of {@link rateLimitedRest}. */
export interface RateLimitedRestOptions {
  readonly observe: RateLimiterObserver;
  /** @default the real clock */
  readonly clock?: Pick<Clock, 'now'>;
  /** @default {@link RATE_LIMIT_WINDOW_MS} */
  readonly windowMs?: number;
}

/**
 * `api` with every request waiting for a token of `bucket` first. Watches are not limited (one long
 * request each, re-established after a backoff). The wait's timer does not hold the process open:
 * a request still waiting at shutdown is not sent, as the kubelet's would not be.
 */
export function rateLimitedRest(api: KubeRest & KubeWatch, bucket: TokenBucket, o: RateLimitedRestOptions): KubeRest & KubeWatch {
  const clock = o.clock ?? realClock;
  const windowMs = o.windowMs ?? RATE_LIMIT_WINDOW_MS;
  return {
    async request(method, path, body, contentType) {
      let waitMs = bucket.reserve();
      if (waitMs > 0) {
        const now = clock.now();
        waitMs = Math.ceil((now + waitMs) / windowMs) * windowMs - now;
        await new Promise((resolve) => setTimeout(resolve, waitMs).unref());
      }
      o.observe(method, waitMs / 1000);
      return api.request(method, path, body, contentType);
    },
    watch: (path, onEvent, signal) => api.watch(path, onEvent, signal),
  };
}
