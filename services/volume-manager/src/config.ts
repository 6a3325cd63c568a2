/**
 * volume-manager's configuration: the common process contract (docs/architecture.md) plus
 * `ROOT_DIR`, `ALLOW_TMPFS` and the node's allocatable overrides (`NODE_CPU`, `NODE_MEMORY`,
 * `NODE_EPHEMERAL_STORAGE`, `NODE_MAX_PODS`). The only reader of `process.env`.
 */
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { DEFAULT_EVICTION_HARD, NodeProcessEnv, parseEvictionThresholds, type Env } from '@splitlet/service';

const boolFromEnv = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

const quantity = z.string().regex(/^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$/, 'must be a resource quantity, e.g. 4, 3500m, 8Gi');

/**
 * Builds the env schema; `runningAsRoot` decides the `ALLOW_TMPFS` default.
 * @param runningAsRoot @default whether this process runs as root
 */
export function configSchema(runningAsRoot: boolean = process.getuid?.() === 0) {
  return z.object({
    ...NodeProcessEnv,
    /** The kubelet root directory; pods live in `<ROOT_DIR>/pods/<uid>/…`. */
    ROOT_DIR: z
      .string()
      .min(1)
      .transform((p) => (isAbsolute(p) ? p : resolve(p))),
    /** May `emptyDir.medium: Memory` mount a tmpfs? @default true when running as root */
    ALLOW_TMPFS: boolFromEnv.optional().transform((v) => v ?? runningAsRoot),
    /** Allocatable CPU published for admission. @default the node's CPU count */
    NODE_CPU: quantity.optional(),
    /** Allocatable memory (bytes or a quantity). @default the node's total memory */
    NODE_MEMORY: quantity.optional(),
    /** Allocatable ephemeral storage (bytes or a quantity). @default the size of the filesystem holding `ROOT_DIR` */
    NODE_EPHEMERAL_STORAGE: quantity.optional(),
    /** maxPods. @default 110 */
    NODE_MAX_PODS: z.coerce.number().int().min(0, 'must be >= 0').default(110),
    /** evictionHard, as `--eviction-hard` writes it (`memory.available<100Mi,nodefs.available<10%`): the thresholds of the pressure conditions. @default the kubelet's */
    EVICTION_HARD: z
      .string()
      .optional()
      .transform((s, ctx) => {
        if (s === undefined) return { ...DEFAULT_EVICTION_HARD };
        const t = parseEvictionThresholds(s);
        if (t === undefined) {
          ctx.addIssue({ code: 'custom', message: 'must be signal<threshold pairs, e.g. memory.available<100Mi,nodefs.available<10%' });
          return z.NEVER;
        }
        return t;
      }),
    /** evictionPressureTransitionPeriod: how long a pressure condition stays true after the signal last crossed its threshold. @default 5 min */
    EVICTION_PRESSURE_TRANSITION_PERIOD_MS: z.coerce.number().int().min(0).default(300_000),
    /**
     * Cluster mode: the kubeconfig of the API server configMap, secret and projected volumes read
     * their objects from (waited for when the file is not there yet). Unset: standalone mode.
     */
    KUBECONFIG: z.string().min(1).optional(),
  });
}

/** The validated configuration. */
export type Config = z.output<ReturnType<typeof configSchema>>;

/** The process environment, for `runNodeProcess` (this module is the only reader of `process.env`). */
export function processEnv(): Env {
  return process.env;
}
