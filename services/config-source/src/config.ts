/**
 * config-source's configuration: the common process contract (docs/architecture.md) plus the
 * file and http sources. The only reader of `process.env`.
 */
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { NodeProcessEnv, type Env } from '@splitlet/service';

/** `Key: Value` → the header; the value is a secret for logging purposes. */
const header = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+:\s*\S.*$/, 'must be "Key: Value"')
  .transform((s) => {
    const i = s.indexOf(':');
    return { name: s.slice(0, i).trim(), value: s.slice(i + 1).trim() };
  });

const period = z.coerce.number().int().min(100);

/** The env schema. */
export const ConfigSchema = z
  .object({
    ...NodeProcessEnv,
    /** The file source: a directory of static pod manifests (or one manifest file); made absolute. */
    MANIFEST_DIR: z
      .string()
      .min(1)
      .transform((p) => (isAbsolute(p) ? p.replace(/\/+$/, '') || '/' : resolve(p)))
      .optional(),
    /** The http source. */
    MANIFEST_URL: z.url({ protocol: /^https?$/ }).optional(),
    /** An extra request header for the http source, `Key: Value`. */
    MANIFEST_URL_HEADER: header.optional(),
    /** The api source: pods applied and deleted over the bus (`splitlet apply -f` with --nats-url). @default true */
    API_SOURCE: z.stringbool().default(true),
    /**
     * The apiserver source: pods bound to this node, listed and watched from the API server this
     * kubeconfig names (waited for when the file is not there yet). Unset: no apiserver source.
     */
    KUBECONFIG: z.string().min(1).optional(),
    FILE_CHECK_FREQUENCY_MS: period.default(20_000),
    HTTP_CHECK_FREQUENCY_MS: period.default(20_000),
  })
  .refine((e) => e.MANIFEST_DIR !== undefined || e.MANIFEST_URL !== undefined || e.API_SOURCE || e.KUBECONFIG !== undefined, {
    message: 'no pod source configured: set MANIFEST_DIR, MANIFEST_URL or KUBECONFIG, or leave API_SOURCE on',
  });

/** The validated configuration. */
export type Config = z.output<typeof ConfigSchema>;

/** The process environment, for `runNodeProcess` (this module is the only reader of `process.env`). */
export function processEnv(): Env {
  return process.env;
}
