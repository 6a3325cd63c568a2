import { realClock, type Clock } from './clock.js';
import type { HealthStatus } from './health-registry.js';

/** Options of {@link ProgressMonitor}. */
export interface ProgressMonitorOptions {
  /** Names the loop in reasons, e.g. `pleg`. */
  readonly name: string;
  /** Healthy while the last progress is at most this old (PLEG: 3 min relist threshold). */
  readonly thresholdMs: number;
  /** @default realClock */
  readonly clock?: Clock;
}

/**
 * Health measured by progress, not by "process is up": a loop calls `progress()` each time it
 * completes an iteration, and `healthy()` fails once the last progress is older than `thresholdMs`.
 * Until the first `progress()`, age is counted from construction.
 *
 * Models pkg/kubelet/pleg/generic.go `Healthy()` (relist threshold).
 */
export class ProgressMonitor {
  readonly name: string;
  readonly thresholdMs: number;
  readonly #clock: Clock;
  readonly #createdAt: number;
  #last: number | undefined;

  constructor(options: ProgressMonitorOptions) {
    if (!(options.thresholdMs > 0)) throw new RangeError(`ProgressMonitor '${options.name}': thresholdMs must be positive`);
    this.name = options.name;
    this.thresholdMs = options.thresholdMs;
    this.#clock = options.clock ?? realClock;
    this.#createdAt = this.#clock.now();
  }

  /** Records progress now. Cheap; call it once per loop iteration. */
  progress(): void {
    this.#last = this.#clock.now();
  }

  /** When progress was last recorded (ms since epoch), if ever. */
  lastProgressAt(): number | undefined {
    return this.#last;
  }

  /** Ok while the last progress (or construction) is at most `thresholdMs` old. */
  healthy(): HealthStatus {
    const since = this.#last ?? this.#createdAt;
    const age = this.#clock.now() - since;
    if (age <= this.thresholdMs) return { ok: true };
    return {
      ok: false,
      reason:
        this.#last === undefined
          ? `${this.name} has made no progress in the ${age} ms since it started; threshold is ${this.thresholdMs} ms`
          : `${this.name} was last seen active ${age} ms ago; threshold is ${this.thresholdMs} ms`,
    };
  }
}
