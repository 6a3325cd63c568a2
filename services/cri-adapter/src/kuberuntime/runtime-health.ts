/**
 * Whether the container runtime is up: the CRI Status call succeeds and reports RuntimeReady,
 * checked every 5 s (unsampled: no trace per check); healthy while the last good check is at most
 * 30 s old.
 *
 * Models pkg/kubelet/kubelet.go (updateRuntimeUp every 5 s, maxWaitForContainerRuntime 30 s) and
 * runtimeState.runtimeErrors.
 */
import type { Clock } from '@splitlet/service';
import { sleep } from '@splitlet/service';
import type { HealthStatus } from '@splitlet/service';
import { runUnsampled, type Logger } from '@splitlet/telemetry';
import type { CriRuntime } from '../ports.js';

/** Options of {@link RuntimeUpChecker}. */
export interface RuntimeUpCheckerOptions {
  readonly runtime: Pick<CriRuntime, 'Status'>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** @default 5000 */
  readonly periodMs?: number;
  /** @default 30000 */
  readonly thresholdMs?: number;
  /** Deadline of one Status call. @default 5000 */
  readonly callTimeoutMs?: number;
  /** After every check: whether the runtime is healthy now and, if not, why (the node's Ready condition). */
  readonly onCheck?: (healthy: boolean, reason: string) => Promise<void>;
}

/** Checks the runtime periodically and answers health probes from the last result. */
export class RuntimeUpChecker {
  readonly #o: RuntimeUpCheckerOptions;
  readonly #startedAt: number;
  #lastOk: number | undefined;
  #lastCheck: number | undefined;
  #lastError = 'no check yet';
  #wasUp: boolean | undefined;

  constructor(options: RuntimeUpCheckerOptions) {
    this.#o = options;
    this.#startedAt = options.clock.now();
  }

  /**
   * One check (updateRuntimeUp): Status must succeed and its RuntimeReady condition be true.
   * Never throws; logs transitions between up and down.
   */
  async check(): Promise<boolean> {
    let up = false;
    try {
      // Periodic chatter: unsampled, so a check every 5 s starts no trace.
      const resp = await runUnsampled(() => this.#o.runtime.Status({}, { deadlineMs: this.#o.callTimeoutMs ?? 5000 }));
      const ready = resp.status?.conditions.find((c) => c.type === 'RuntimeReady');
      if (ready === undefined || !ready.status) {
        this.#lastError = `container runtime status check may not have completed yet: runtime not ready: RuntimeReady=false reason:${ready?.reason ?? ''} message:${ready?.message ?? ''}`;
      } else {
        up = true;
        this.#lastOk = this.#o.clock.now();
      }
    } catch (e) {
      this.#lastError = `container runtime is down: ${e instanceof Error ? e.message : String(e)}`;
    }
    this.#lastCheck = this.#o.clock.now();
    if (up !== this.#wasUp) {
      if (up) this.#o.logger.info('container runtime is up');
      else this.#o.logger.warn('container runtime is not ready', { reason: this.#lastError });
      this.#wasUp = up;
    }
    if (this.#o.onCheck !== undefined) {
      const h = this.healthy();
      await this.#o.onCheck(h.ok, h.ok ? '' : this.#lastError).catch((e: unknown) => this.#o.logger.warn('could not report the runtime status', { err: e }));
    }
    return up;
  }

  /** Checks every period until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const period = this.#o.periodMs ?? 5000;
    do {
      await this.check();
    } while (await sleep(period, signal, this.#o.clock));
  }

  /**
   * Liveness of the loop itself: a check (successful or not) completed within the threshold.
   * A down runtime does not make this fail; a stuck loop does.
   */
  alive(): HealthStatus {
    const threshold = this.#o.thresholdMs ?? 30_000;
    const age = this.#o.clock.now() - (this.#lastCheck ?? this.#startedAt);
    if (age <= threshold) return { ok: true };
    return { ok: false, reason: `the runtime-up loop has not completed a check for ${age} ms; threshold is ${threshold} ms` };
  }

  /** Healthy while the last successful check is at most the threshold old (counted from start before the first). */
  healthy(): HealthStatus {
    const threshold = this.#o.thresholdMs ?? 30_000;
    const since = this.#lastOk ?? this.#startedAt;
    const age = this.#o.clock.now() - since;
    if (age <= threshold) return { ok: true };
    return { ok: false, reason: `${this.#lastError}; last successful runtime check ${this.#lastOk === undefined ? 'never' : `${age} ms ago`}, threshold ${threshold} ms` };
  }
}
