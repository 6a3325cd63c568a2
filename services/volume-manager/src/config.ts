/**
 * volume-manager's configuration: the common process contract (docs/architecture.md) plus
 * `ROOT_DIR` and `ALLOW_TMPFS`. The only reader of `process.env`.
 */
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { loadConfig, NodeProcessEnv } from '@splitlet/service';
import type { Env } from '@splitlet/service';

const boolFromEnv = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Builds the env schema; `runningAsRoot` decides the `ALLOW_TMPFS` default. */
export function configSchema(runningAsRoot: boolean) {
  return z
    .object({
      ...NodeProcessEnv,
      /** The kubelet root directory; pods live in `<ROOT_DIR>/pods/<uid>/…`. */
      ROOT_DIR: z.string().min(1).transform((p) => (isAbsolute(p) ? p : resolve(p))),
      /** May `emptyDir.medium: Memory` mount a tmpfs? @default true when running as root */
      ALLOW_TMPFS: boolFromEnv.optional().transform((v) => v ?? runningAsRoot),
    })
    .transform((e) => ({
      natsUrl: e.NATS_URL,
      nodeName: e.NODE_NAME,
      healthPort: e.HEALTH_PORT,
      healthHost: e.HEALTH_HOST,
      healthPortFile: e.HEALTH_PORT_FILE,
      logLevel: e.LOG_LEVEL,
      publishSpans: e.PUBLISH_SPANS,
      rootDir: e.ROOT_DIR,
      allowTmpfs: e.ALLOW_TMPFS,
    }));
}

/** The validated configuration. */
export type Config = z.output<ReturnType<typeof configSchema>>;

/**
 * Reads the configuration from `env` (default `process.env`). Throws ConfigError naming every bad
 * variable.
 */
export function readConfig(env: Env = process.env, runningAsRoot: boolean = process.getuid?.() === 0): Config {
  return loadConfig(configSchema(runningAsRoot), env);
}

/** The environment, for the OTEL_* variables telemetry reads. */
export function processEnv(): Env {
  return process.env;
}
