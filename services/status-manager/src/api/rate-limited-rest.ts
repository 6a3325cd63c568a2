/**
 * The kubelet's client-side rate limits on the API server (KubeletConfiguration kubeAPIQPS /
 * kubeAPIBurst for its main client, eventRecordQPS / eventBurst for its event client; 50 / 100 each).
 * client-go builds a token bucket per client (flowcontrol.NewTokenBucketRateLimiter, a
 * golang.org/x/time/rate limiter) and every request waits for its token before it is sent: a burst
 * of pods is reported to the API server at that rate, never dropped, and the status manager's
 * per-pod coalescing means a pod whose patch waited sends its newest status.
 */
import type { TokenBucket } from '@splitlet/service';
import type { KubeRest, KubeWatch } from './kube-rest.js';

/** Where a rate-limited request's wait is reported (client-go's rest_client_rate_limiter_duration_seconds). */
export type RateLimiterObserver = (verb: string, waitedSeconds: number) => void;

/**
 * `api` with every request waiting for a token of `bucket` first. Watches are not limited (one long
 * request each, re-established after a backoff). The wait's timer does not hold the process open:
 * a request still waiting at shutdown is not sent, as the kubelet's would not be.
 */
export function rateLimitedRest(api: KubeRest & KubeWatch, bucket: TokenBucket, observe: RateLimiterObserver): KubeRest & KubeWatch {
  return {
    async request(method, path, body, contentType) {
      const waitMs = bucket.reserve();
      if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs).unref());
      observe(method, waitMs / 1000);
      return api.request(method, path, body, contentType);
    },
    watch: (path, onEvent, signal) => api.watch(path, onEvent, signal),
  };
}
