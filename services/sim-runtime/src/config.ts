/**
 * sim-runtime's configuration: the common process contract (`ProcessEnv`: health and log settings;
 * sim-runtime has no bus) plus the simulator's `SIM_*` variables. The only reader of `process.env`.
 */
import * as path from 'node:path';
import { z } from 'zod';
import { CriMethods, parseCriErrorCode, type CriMethod } from '@splitlet/cri';
import { ProcessEnv, type Env, type ProcessSettings } from '@splitlet/service';
import { BUSYBOX_IMAGE, knownImageConfig } from './images/known-images.js';
import type { SimPrivateRegistry, SimRegistry } from './images/sim-images.js';
import type { SimFailures, SimImageConfig, SimLatency } from './runtime/sim-runtime.js';

/** The validated configuration: the common settings under their env names, the simulator's parsed. */
export interface SimRuntimeConfig extends ProcessSettings {
  /** Absolute path of the unix socket to serve CRI on. */
  socketPath: string;
  latencyMs: SimLatency;
  failures: SimFailures;
  podSubnet: string;
  /** Simulated pull speed (bytes/s) when SIM_LATENCY_MS gives PullImage no latency of its own. */
  pullBytesPerSecond: number;
  /** Images present at start (`'all'`: every reference except missing ones). */
  images: readonly string[] | 'all';
  /** Their ENTRYPOINT/CMD/ENV, by normalized reference. */
  imageConfig: (ref: string) => SimImageConfig | undefined;
  registry: SimRegistry;
  /** Registries that answer 401 without their credentials. */
  privateRegistries: readonly SimPrivateRegistry[];
}

const methodNames = Object.keys(CriMethods) as CriMethod[];
const Method = z.enum(methodNames as [CriMethod, ...CriMethod[]]);

/** JSON text parsed, with a readable issue when it is not JSON. */
const jsonText = z.string().transform((text, ctx) => {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: `not valid JSON (${(e as Error).message})` });
    return z.NEVER;
  }
});

const Millis = z.number().finite().min(0);

const LatencyPerRpc = jsonText.pipe(z.partialRecord(z.union([Method, z.literal('default')]), Millis));

/** A number of ms for every RPC, or a JSON object of RPC (or `default`) → ms. */
const Latency = z.string().transform((text, ctx): SimLatency => {
  if (text.trim().startsWith('{')) {
    const r = LatencyPerRpc.safeParse(text);
    if (r.success) return r.data;
    for (const issue of r.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    return z.NEVER;
  }
  const ms = Number(text);
  if (text.trim() === '' || !Number.isFinite(ms) || ms < 0) {
    ctx.addIssue({ code: 'custom', message: 'must be milliseconds (e.g. 5) or JSON per RPC (e.g. {"default":2,"PullImage":500})' });
    return z.NEVER;
  }
  return { default: ms };
});

const Failure = z.strictObject({
  code: z.string().refine((c) => parseCriErrorCode(c) !== undefined, { message: 'unknown gRPC/CRI error code' }),
  message: z.string().optional(),
  times: z.number().int().positive().optional(),
  rate: z.number().min(0).max(1).optional(),
});

const Failures = jsonText.pipe(z.partialRecord(Method, Failure));

const Cidr = z
  .string()
  .regex(/^(\d{1,3}\.){3}\d{1,3}\/(\d|[12]\d|30)$/, 'must be an IPv4 CIDR such as 10.88.0.0/16')
  .refine(
    (c) =>
      c
        .split('/')[0]
        ?.split('.')
        .every((o) => Number(o) <= 255) ?? false,
    'octets must be at most 255',
  );

const BUSYBOX_CONFIG: SimImageConfig = BUSYBOX_IMAGE;

/**
 * The images `splitlet runtime` builds for the local containerd (libs/node-setup/src/images.ts
 * and oci-image.ts IMAGE_RECIPES): busybox 1.36, 1.37 (also `latest`) with `Cmd ["sh"]`, and the
 * pause image (`/bin/sleep infinity`). The simulated node has exactly these, like the real one.
 */
export const LOCAL_IMAGES: Readonly<Record<string, SimImageConfig>> = {
  'docker.io/library/busybox:1.36': BUSYBOX_CONFIG,
  'docker.io/library/busybox:1.37': BUSYBOX_CONFIG,
  'docker.io/library/busybox:latest': BUSYBOX_CONFIG,
  'registry.k8s.io/pause:3.9': { entrypoint: ['/bin/sleep'], cmd: ['infinity'], ...(BUSYBOX_CONFIG.env !== undefined ? { env: BUSYBOX_CONFIG.env } : {}) },
};

const Images = z
  .string()
  .transform((s) => s.trim())
  .pipe(
    z.union([
      z.enum(['local', 'all']),
      z
        .string()
        .min(1, 'must be local, all, or a comma-separated list of image references')
        .transform((s) =>
          s
            .split(',')
            .map((x) => x.trim())
            .filter((x) => x !== ''),
        ),
    ]),
  );

const PrivateRegistries = z
  .string()
  .transform((s, ctx) => {
    try {
      return JSON.parse(s) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON array of {host, pathPrefix?, username, password}' });
      return z.NEVER;
    }
  })
  .pipe(z.array(z.object({ host: z.string().min(1), pathPrefix: z.string().optional(), username: z.string(), password: z.string() }).strict()));

/**
 * The environment sim-runtime reads, parsed by `runProcess` (`loadConfig`):
 *
 * - `SIM_SOCKET` (required): socket path, e.g. `/run/splitlet/sim.sock` or `unix:///run/splitlet/sim.sock`.
 * - `SIM_LATENCY_MS`: a number (every RPC) or JSON per RPC, e.g. `{"default":2,"PullImage":500}`.
 * - `SIM_FAILURES`: JSON per RPC, e.g. `{"CreateContainer":{"code":"UNAVAILABLE","times":1}}`.
 * - `SIM_POD_SUBNET`: pod IPs come from it; a loopback range makes them reachable. @default 127.77.0.0/16
 * - `SIM_PULL_MB_PER_S`: simulated pull speed of an absent image. @default 100
 * - `SIM_IMAGES`: `local` (the images the local containerd gets, {@link LOCAL_IMAGES}), `all` (every
 *   reference is present except those named `missing`/`doesnotexist`), or a comma-separated list. @default local
 * - `SIM_REGISTRY`: `open` (a reachable registry: pulls succeed except for missing images) or
 *   `unreachable` (every PullImage fails, as on the local containerd without registry access). @default open
 * - `SIM_PRIVATE_REGISTRIES`: JSON `[{"host":"127.0.0.1:5000","pathPrefix":"private/","username":"u","password":"p"}]`:
 *   with `SIM_REGISTRY=open`, pulls from these answer containerd's 401 text unless the PullImage auth
 *   holds the credentials. @default none
 * - `HEALTH_PORT`, `HEALTH_PORT_FILE`, `HEALTH_HOST`, `LOG_LEVEL`: the common process contract.
 */
export const SimRuntimeEnv = z
  .object({
    ...ProcessEnv,
    SIM_SOCKET: z
      .string()
      .min(1)
      .transform((s) => s.replace(/^unix:\/\//, ''))
      .refine((s) => path.isAbsolute(s), 'must be an absolute path (optionally prefixed with unix://)'),
    SIM_LATENCY_MS: Latency.optional(),
    SIM_FAILURES: Failures.optional(),
    SIM_POD_SUBNET: Cidr.default('127.77.0.0/16'),
    SIM_PULL_MB_PER_S: z.coerce.number().positive('must be a positive number of megabytes per second').default(100),
    SIM_IMAGES: Images.default('local'),
    SIM_REGISTRY: z.enum(['unreachable', 'open']).default('open'),
    SIM_PRIVATE_REGISTRIES: PrivateRegistries.optional(),
  })
  .transform((e): SimRuntimeConfig => ({
    HEALTH_PORT: e.HEALTH_PORT,
    ...(e.HEALTH_PORT_FILE === undefined ? {} : { HEALTH_PORT_FILE: e.HEALTH_PORT_FILE }),
    HEALTH_HOST: e.HEALTH_HOST,
    LOG_LEVEL: e.LOG_LEVEL,
    socketPath: e.SIM_SOCKET,
    latencyMs: e.SIM_LATENCY_MS ?? {},
    failures: (e.SIM_FAILURES ?? {}) as SimFailures,
    podSubnet: e.SIM_POD_SUBNET,
    pullBytesPerSecond: e.SIM_PULL_MB_PER_S * 1_000_000,
    images: e.SIM_IMAGES === 'local' ? Object.keys(LOCAL_IMAGES) : e.SIM_IMAGES,
    // The local images as splitlet builds them; any other by what the simulator knows of it.
    imageConfig: (ref) => LOCAL_IMAGES[ref] ?? knownImageConfig(ref),
    registry: e.SIM_REGISTRY,
    privateRegistries: (e.SIM_PRIVATE_REGISTRIES ?? []).map(({ pathPrefix, ...r }) => ({ ...r, ...(pathPrefix !== undefined ? { pathPrefix } : {}) })),
  }));

/** The process environment, for `runProcess` (this module is the only reader of `process.env`). */
export function processEnv(): Env {
  return process.env;
}
