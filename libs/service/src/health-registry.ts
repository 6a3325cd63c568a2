import { ServiceError, ServiceErrorCodes } from './service-error.js';

/** The answer of one health check: `reason` says what is wrong when `ok` is false. */
export interface HealthStatus {
  readonly ok: boolean;
  readonly reason?: string;
}

/** A synchronous, cheap health check (it runs on every probe). A throw counts as not ok. */
export type HealthCheck = () => HealthStatus;

/** Options of {@link HealthRegistry.register}. */
export interface HealthCheckOptions {
  /**
   * A readiness check only (`/readyz`): failing it takes the process out of rotation but does not
   * get it restarted. @default false (a liveness check, reported by `/healthz` and `/readyz`)
   */
  readonly readiness?: boolean;
}

/** One failing check. */
export interface HealthFailure {
  readonly name: string;
  readonly reason: string;
}

/** The combined result of a probe. */
export interface HealthReport {
  readonly ok: boolean;
  readonly failures: readonly HealthFailure[];
}

/**
 * The checks behind `/healthz` (liveness) and `/readyz` (readiness) — each component that owns a
 * loop registers its `healthy()` here (health by progress, see `ProgressMonitor`). Registration
 * order is report order.
 */
export class HealthRegistry {
  readonly #checks = new Map<string, { check: HealthCheck; readiness: boolean }>();

  /**
   * Adds a check. Returns a function that removes it.
   * @throws {@link ServiceError} `DuplicateHealthCheck` when `name` is taken.
   */
  register(name: string, check: HealthCheck, options: HealthCheckOptions = {}): () => void {
    if (this.#checks.has(name)) {
      throw new ServiceError(ServiceErrorCodes.DuplicateHealthCheck, `health check '${name}' is already registered`);
    }
    const entry = { check, readiness: options.readiness ?? false };
    this.#checks.set(name, entry);
    return () => {
      if (this.#checks.get(name) === entry) this.#checks.delete(name);
    };
  }

  /** Runs the liveness checks (`readiness: false`). */
  liveness(): HealthReport {
    return this.#run(false);
  }

  /** Runs every check: liveness and readiness ones. */
  readiness(): HealthReport {
    return this.#run(true);
  }

  #run(includeReadiness: boolean): HealthReport {
    const failures: HealthFailure[] = [];
    for (const [name, { check, readiness }] of this.#checks) {
      if (readiness && !includeReadiness) continue;
      let status: HealthStatus;
      try {
        status = check();
      } catch (e) {
        status = { ok: false, reason: `check threw: ${e instanceof Error ? e.message : String(e)}` };
      }
      if (!status.ok) failures.push({ name, reason: status.reason ?? 'not ok' });
    }
    return { ok: failures.length === 0, failures };
  }
}
