/**
 * The prober's configuration, read from the environment (the only reader of `process.env`).
 */
import { z } from 'zod';
import { NodeProcessEnv, type Env } from '@splitlet/service';

/** The environment variables the prober reads. */
export const ProberEnv = z.object({
  ...NodeProcessEnv,
  /** The CRI runtime's socket (exec probes run through its ExecSync), e.g. `unix:///run/containerd/containerd.sock`. */
  CRI_ENDPOINT: z.string().min(1, 'CRI_ENDPOINT is required (the runtime socket exec probes use)'),
  /** Per-call CRI timeout besides ExecSync's own (the kubelet's runtimeRequestTimeout). @default 120000 */
  RUNTIME_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(120_000),
});

/** The prober's typed configuration. */
export type ProberConfig = z.output<typeof ProberEnv>;

/** The process environment, for `runNodeProcess` (this module is the only reader of `process.env`). */
export function processEnv(): Env {
  return process.env;
}
