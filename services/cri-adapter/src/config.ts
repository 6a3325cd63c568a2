/**
 * The cri-adapter's environment: the common process contract plus the runtime settings. The only
 * reader of `process.env`.
 */
import { isAbsolute, resolve } from 'node:path';
import { NodeProcessEnv, type Env } from '@splitlet/service';
import { z } from 'zod';

const ipList = z
  .string()
  .optional()
  .transform((s) =>
    (s ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter((x) => x !== ''),
  );

/** The variables, with their defaults. */
export const CriAdapterEnv = z.object({
  ...NodeProcessEnv,
  /** The runtime's CRI socket, `unix:///path.sock`. */
  CRI_ENDPOINT: z.string().regex(/^unix:\/\/\/.+/, 'must be unix:///<absolute path to the socket>'),
  /** Deadline of each CRI call (the kubelet's runtimeRequestTimeout). */
  RUNTIME_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(120_000),
  /**
   * The kubelet root directory (as volume-manager's `ROOT_DIR`): the first place the node's registry
   * credentials are looked for (`<ROOT_DIR>/config.json`, then the working dir, `$HOME/.docker`,
   * `/.docker`; legacy `.dockercfg` after).
   */
  ROOT_DIR: z
    .string()
    .min(1)
    .default('/var/lib/kubelet')
    .transform((p) => (isAbsolute(p) ? p : resolve(p))),
  /** Root of the pod log directories. */
  POD_LOG_DIR: z.string().min(1).default('/var/log/pods'),
  /** The pause image (the kubelet's --pod-infra-container-image): pulled at start when missing. */
  SANDBOX_IMAGE: z.string().min(1).default('registry.k8s.io/pause:3.9'),
  /** One image pull at a time (the kubelet's serializeImagePulls). */
  SERIALIZE_IMAGE_PULLS: z.stringbool().default(true),
  /** registryPullQPS: image pulls per second (0: no limit). @default 5 */
  REGISTRY_PULL_QPS: z.coerce.number().min(0).default(5),
  /** registryBurst: pulls allowed at once above the rate (registryPullQPS > 0). @default 10 */
  REGISTRY_BURST: z.coerce.number().int().min(0).default(10),
  /** Comma-separated cluster DNS server IPs (ClusterFirst pods). */
  CLUSTER_DNS: ipList,
  /** e.g. `cluster.local`. */
  CLUSTER_DOMAIN: z.string().default(''),
  /** The node's resolver config; '' disables it. */
  RESOLV_CONF: z.string().default('/etc/resolv.conf'),
  /** Base of the pod cgroups, e.g. `/kubepods` (cgroupfs) or `kubepods.slice` (systemd); unset: none. */
  CGROUP_PARENT: z.string().min(1).optional(),
  /**
   * The evented PLEG (the kubelet's EventedPLEG gate): subscribe to the runtime's container events
   * (CRI GetContainerEvents) and hand them to pleg, which then relists only every few minutes.
   * Without it, or with a runtime that does not stream events (containerd 1.6), pleg relists every
   * second and is poked after each change. @default true
   */
  EVENTED_PLEG: z.stringbool().default(true),
  /** The window over which one pod sandbox's events are coalesced into one message to pleg. @default 10 */
  RUNTIME_EVENT_COALESCE_MS: z.coerce.number().int().min(0).max(1000).default(10),
  /**
   * Cluster mode: the kubeconfig of the API server env configMap / secret references and image pull
   * secrets are read from (waited for when the file is not there yet). Unset: standalone mode.
   */
  KUBECONFIG: z.string().min(1).optional(),
});

/** The validated configuration. */
export type CriAdapterConfig = z.output<typeof CriAdapterEnv>;

/** The process environment, for `runNodeProcess` (this module is the only reader of `process.env`). */
export function processEnv(): Env {
  return process.env;
}
