/**
 * The pod-worker's environment contract: the common process contract plus the pod workers' knobs.
 * The only module that reads `process.env`.
 */
import { hostname } from 'node:os';
import { z } from 'zod';
import { DEFAULT_PARTITIONS } from '@splitlet/api';
import { NodeProcessEnv } from '@splitlet/service';
import type { Env } from '@splitlet/service';

const ms = (def: number) => z.coerce.number().int().positive().default(def);

/** A KV-key-safe instance id: letters, digits, `-` and `_` (dots would split the member key). */
export function defaultInstanceId(host: string = hostname(), pid: number = process.pid): string {
  return `${host}-${pid}`.replace(/[^A-Za-z0-9_-]/g, '-');
}

/** The environment variables of the pod-worker process. */
export const PodWorkerEnv = z
  .object({
    ...NodeProcessEnv,
    /** This replica's id in `sl_members` and in lease values. @default `<hostname>-<pid>` */
    INSTANCE_ID: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/, 'may contain only letters, digits, "-" and "_"')
      .optional(),
    /** Must equal sync-loop's. */
    PARTITIONS: z.coerce.number().int().min(1).max(4096).default(DEFAULT_PARTITIONS),
    /** syncFrequency: a running pod is synced again this long (jittered up to 1.5×) after a successful sync. */
    SYNC_FREQUENCY_MS: ms(60_000),
    LEASE_RENEW_MS: ms(3000),
    MEMBER_HEARTBEAT_MS: ms(3000),
    /** Balance round period: retry unowned partitions, release surplus ones. */
    BALANCE_INTERVAL_MS: ms(2000),
    VOLUME_TIMEOUT_MS: ms(120_000),
    RUNTIME_SYNC_TIMEOUT_MS: ms(240_000),
    /** Longest wait for a runtime cache newer than the last sync (the kubelet waits without bound). */
    RUNTIME_CACHE_WAIT_MS: ms(5000),
    /** How long a release / SIGTERM lets in-flight syncs finish before aborting them. */
    DRAIN_TIMEOUT_MS: ms(20_000),
    /** Container ID prefix in statuses (`<runtime>://<id>`). */
    RUNTIME_NAME: z
      .string()
      .regex(/^[a-z0-9_-]+$/)
      .default('containerd'),
    MAX_CONCURRENT_SYNCS: z.coerce.number().int().min(1).max(10_000).default(64),
    /** canRunPod: allow privileged containers and host namespaces. */
    ALLOW_PRIVILEGED: z.stringbool().default(false),
    /** Comma-separated node IPs for status.hostIP(s) (optional). */
    HOST_IPS: z
      .string()
      .optional()
      .transform((s) =>
        s === undefined || s.trim() === ''
          ? []
          : s
              .split(',')
              .map((x) => x.trim())
              .filter((x) => x !== ''),
      ),
  })
  .transform((c) => ({ ...c, instanceId: c.INSTANCE_ID ?? defaultInstanceId() }));

/** The parsed configuration (`instanceId`: `INSTANCE_ID` or the default). */
export type PodWorkerConfig = z.output<typeof PodWorkerEnv>;

/** The process environment, for `runNodeProcess`. */
export function processEnv(): Env {
  return process.env;
}
