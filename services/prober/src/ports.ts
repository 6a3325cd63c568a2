/**
 * The narrow interfaces the prober's domain code consumes; adapters implement them over the bus
 * and the CRI, tests with fakes.
 */
import type { BoundPod, PodProbeResults } from '@splitlet/api';

export type { Clock, TimerHandle } from '@splitlet/service';

/** A container event the prober records (Unhealthy, ProbeWarning). Fire and forget: failures are logged. */
export interface ProbeEvent {
  readonly pod: BoundPod;
  readonly containerName: string;
  readonly init: boolean;
  readonly eventType: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
}

/** The event recorder. */
export interface ProbeEventSink {
  record(event: ProbeEvent): void;
}

/** The results bucket `sl_probe` (the prober is its only writer). */
export interface ProbeResultsStore {
  /** Every stored record of the node (to resume after a restart). */
  list(): Promise<PodProbeResults[]>;
  put(record: PodProbeResults): Promise<void>;
  delete(uid: string): Promise<void>;
}

/** The structured logger. */
export interface Log {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}
