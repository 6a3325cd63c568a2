/**
 * Subscribes to the runtime's container events (CRI GetContainerEvents) and keeps the subscription
 * up: each event is translated into its pod's status part and handed on in order; a broken stream
 * is reported and subscribed again with a backoff. A runtime that does not implement the RPC
 * (containerd 1.6 answers Unimplemented) is asked again only every few minutes: meanwhile nothing
 * changes for pleg, which keeps relisting every second.
 *
 * Models the subscription half of pkg/kubelet/pleg/evented.go (watchEventsChannel, with the
 * evented_pleg_connection_* metrics); the other half (applying the statuses) is pleg's. Unlike the
 * kubelet, which gives up for good after `eventedPlegMaxStreamRetries` failures, the watcher keeps
 * trying (the backoff caps at 5 s), so the evented PLEG comes back once the runtime does.
 *
 *     subscribe ─ established ─▶ streamUp(id) ─ event … event ─ error/end ─▶ streamDown(reason) ─ backoff ─┐
 *         ▲                                                                                              │
 *         └──────────────────────────────────────────────────────────────────────────────────────────────┘
 */
import { randomBytes } from 'node:crypto';
import { errorMessage } from '@splitlet/api';
import { isCriError, type ContainerEventResponse, type RuntimeService } from '@splitlet/cri';
import { sleep, type Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { ContainerEventPart } from '../kuberuntime/runtime-status-reader.js';

/** The kubelet's eventedPlegMaxStreamRetries: after this many failures in a row the failure is logged as a fallback. */
export const EVENTED_PLEG_MAX_STREAM_RETRIES = 5;

/** One runtime event as handed on: its part of the pod's status, plus what happened. */
export interface RuntimeEventNotice {
  readonly part: ContainerEventPart;
  /** The CRI event's container id (the sandbox id for a sandbox's own events). */
  readonly containerId: string;
  readonly type: ContainerEventResponse['containerEventType'];
}

/** Where the watcher hands the stream's life and its events (the forwarder). Calls never overlap. */
export interface RuntimeEventSink {
  /** A new subscription is live: every event from now on follows. `stream` names it. */
  streamUp(stream: string): void;
  /** One event of the live subscription, in the runtime's order. */
  event(notice: RuntimeEventNotice): void;
  /** The live subscription ended (`reason`); events may have been missed until the next `streamUp`. */
  streamDown(reason: string): void;
}

/** The evented PLEG's connection metrics (kubelet_evented_pleg_connection_*). */
export interface EventedPlegConnectionMetrics {
  /** kubelet_evented_pleg_connection_success_count: a subscription was established. */
  connected(): void;
  /** kubelet_evented_pleg_connection_error_count: a subscription failed or broke. */
  failed(): void;
}

/** Dependencies and settings of {@link RuntimeEventWatcher}. */
export interface RuntimeEventWatcherOptions {
  readonly runtime: Pick<RuntimeService, 'GetContainerEvents'>;
  /** Translates an event with the relist's code (RuntimeStatusReader.fromContainerEvent). */
  readonly translate: (event: ContainerEventResponse) => Promise<ContainerEventPart | undefined>;
  readonly sink: RuntimeEventSink;
  readonly metrics: EventedPlegConnectionMetrics;
  readonly clock: Clock;
  readonly logger: Logger;
  /** First retry delay after a failure, doubling per failure in a row. @default 500 */
  readonly retryInitialMs?: number;
  /** The longest retry delay. @default 5000 */
  readonly retryMaxMs?: number;
  /** Delay before asking a runtime that answered Unimplemented again. @default 300000 */
  readonly unimplementedRetryMs?: number;
}

/** Keeps one GetContainerEvents subscription up until its signal aborts. */
export class RuntimeEventWatcher {
  readonly #o: RuntimeEventWatcherOptions;
  #live = false;
  #failures = 0;
  #unsupportedLogged = false;

  constructor(options: RuntimeEventWatcherOptions) {
    this.#o = options;
  }

  /** True while a subscription is established and has not failed. */
  get live(): boolean {
    return this.#live;
  }

  /** Subscribes, and again after every failure, until `signal` aborts; resolves then. Never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const outcome = await this.#subscribeOnce(signal);
      if (signal.aborted) return;
      const delay = outcome === 'unimplemented' ? (this.#o.unimplementedRetryMs ?? 300_000) : this.#backoff();
      await sleep(delay, signal, this.#o.clock);
    }
  }

  #backoff(): number {
    const initial = this.#o.retryInitialMs ?? 500;
    return Math.min(this.#o.retryMaxMs ?? 5000, initial * 2 ** Math.min(20, Math.max(0, this.#failures - 1)));
  }

  /** One subscription, from the call to its end: 'unimplemented', or 'ended' (broke, failed, or aborted). */
  async #subscribeOnce(signal: AbortSignal): Promise<'unimplemented' | 'ended'> {
    const { logger, metrics, sink } = this.#o;
    const sub = new AbortController();
    const stop = (): void => sub.abort();
    signal.addEventListener('abort', stop, { once: true });
    const stream = this.#o.runtime.GetContainerEvents({}, { signal: sub.signal });
    try {
      try {
        await stream.established;
      } catch (e) {
        if (signal.aborted) return 'ended';
        if (isCriError(e, 'Unimplemented')) {
          if (!this.#unsupportedLogged) {
            logger.info('the container runtime does not stream container events (GetContainerEvents is unimplemented); pleg keeps relisting every period', {
              err: errorMessage(e),
            });
            this.#unsupportedLogged = true;
          }
          return 'unimplemented';
        }
        this.#failed(`could not subscribe to the runtime's container events: ${errorMessage(e)}`);
        return 'ended';
      }
      const id = randomBytes(8).toString('hex');
      metrics.connected();
      this.#live = true;
      if (this.#failures > 0 || this.#unsupportedLogged) logger.info("subscribed to the runtime's container events again", { stream: id, afterFailures: this.#failures });
      else logger.info("subscribed to the runtime's container events", { stream: id });
      this.#failures = 0;
      this.#unsupportedLogged = false;
      sink.streamUp(id);
      let reason = 'the runtime ended the container event stream';
      try {
        for await (const event of stream) {
          const part = await this.#o.translate(event);
          if (part !== undefined) sink.event({ part, containerId: event.containerId, type: event.containerEventType });
        }
      } catch (e) {
        reason = `the container event stream failed: ${errorMessage(e)}`;
      }
      this.#live = false;
      if (signal.aborted) {
        sink.streamDown('cri-adapter is stopping');
        return 'ended';
      }
      sink.streamDown(reason);
      this.#failed(reason);
      return 'ended';
    } finally {
      signal.removeEventListener('abort', stop);
      sub.abort();
    }
  }

  #failed(reason: string): void {
    this.#o.metrics.failed();
    this.#failures++;
    const fields = { err: reason, failures: this.#failures, retryInMs: this.#backoff() };
    // evented.go falls back to the generic PLEG after eventedPlegMaxStreamRetries failures; pleg does at the first.
    const { logger } = this.#o;
    if (this.#failures === EVENTED_PLEG_MAX_STREAM_RETRIES) logger.warn('Evented PLEG: the runtime event stream keeps failing; pleg relists every period until it is back', fields);
    else if (this.#failures < EVENTED_PLEG_MAX_STREAM_RETRIES) logger.warn('Evented PLEG: Failed to get container events, retrying', fields);
    else logger.debug('Evented PLEG: Failed to get container events, retrying', fields);
  }
}
