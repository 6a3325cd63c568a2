/**
 * The embedded API server's configuration, read from the environment (the only reader of
 * `process.env`).
 */
import { z } from 'zod';
import { type Env, NodeProcessEnv } from '@splitlet/service';

/** The environment variables the API server reads. */
export const ApiServerEnv = z.object({
  ...NodeProcessEnv,
  /** HTTPS port of the Kubernetes API. @default 6443 */
  API_PORT: z.coerce.number().int().min(0).max(65535).default(6443),
  /** Address the API binds. @default 127.0.0.1 */
  API_HOST: z.string().min(1).default('127.0.0.1'),
  /** Where the CA, the serving certificate and the token are kept (created on first start). */
  API_CERT_DIR: z.string().min(1),
  /** When set, a kubeconfig for this server is written there (mode 0600). */
  API_KUBECONFIG: z.string().min(1).optional(),
  /** Extra names/addresses for the serving certificate, comma-separated. */
  API_SANS: z
    .string()
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== ''),
    ),
  /** The address clients use in the kubeconfig. @default https://<API_HOST>:<port> */
  API_ADVERTISE_URL: z.url().optional(),
  /** Run the built-in minimal scheduler (binds pods without spec.nodeName; see scheduler/scheduler.ts). @default true */
  API_SCHEDULER: z.stringbool().default(true),
  /** The JetStream KV bucket the objects live in. @default sl_api */
  API_BUCKET: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .default('sl_api'),
});

/** The process environment, for `runProcess` (this module is the only reader of `process.env`). */
export function processEnv(): Env {
  return process.env;
}

/** The API server's typed configuration. */
export type ApiServerConfig = z.output<typeof ApiServerEnv>;
