/**
 * The narrow interfaces config-source consumes. The domain (`src/sources`, `src/pod-config`)
 * depends only on these, a clock and a logger; `src/adapters` implements them over NATS.
 */
import type { Context } from '@opentelemetry/api';
import type { KubeEvent, PodUpdate } from '@splitlet/api';

/**
 * Delivers one merged PodUpdate to sync-loop (the kubelet's `updates` channel). Resolves once the
 * update is durably stored (the JetStream ack); rejects otherwise. `msgID` lets the bus drop a
 * duplicate when a publish is retried after a lost ack.
 */
export interface UpdatePublisher {
  publish(update: PodUpdate, ctx: Context, msgID: string): Promise<void>;
}

/**
 * Records a Kubernetes event. `subjectKey` is the last token of the events subject: the pod UID for a
 * pod's event, the node token for a node's event.
 */
export interface EventRecorder {
  record(event: KubeEvent, subjectKey: string): Promise<void>;
}

/** Metrics config-source exports (no kubelet counterpart, hence the `splitlet_` prefix). */
export interface ConfigMetrics {
  /** `splitlet_config_manifest_errors_total{source}`. */
  manifestError(source: string): void;
  /** `splitlet_config_pods{source}`: pods a source currently contributes. */
  setPods(source: string, count: number): void;
}
