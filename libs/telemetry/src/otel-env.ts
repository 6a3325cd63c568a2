import { TelemetryError, TelemetryErrorCodes } from './telemetry-error.js';

/** The environment as a plain map (e.g. `process.env`, passed in by the service's `config.ts`). */
export type Env = Readonly<Record<string, string | undefined>>;

/** The samplers `OTEL_TRACES_SAMPLER` may name (the spec's built-in set). */
export const SamplerNames = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

/** One of {@link SamplerNames}. */
export type SamplerName = (typeof SamplerNames)[number];

/** Where and how spans are exported over OTLP http/protobuf. */
export interface OtlpExportSettings {
  /** Full traces URL, e.g. `http://collector:4318/v1/traces`. */
  readonly url: string;
  /** Extra request headers (values may be secrets: never log them). */
  readonly headers: Readonly<Record<string, string>>;
  /** Per-export timeout in ms, when set. */
  readonly timeoutMillis?: number;
}

/** What the standard `OTEL_*` variables ask for, validated. */
export interface OtelSettings {
  /** `OTEL_SDK_DISABLED=true`: install nothing, trace with the no-op API. */
  readonly disabled: boolean;
  /** OTLP export, or `undefined` when no exporter is wanted. */
  readonly otlp: OtlpExportSettings | undefined;
  /** The sampler, by its `OTEL_TRACES_SAMPLER` name. */
  readonly sampler: SamplerName;
  /** The ratio for the `*traceidratio` samplers (0…1). */
  readonly samplerRatio: number;
  /** Extra resource attributes from `OTEL_RESOURCE_ATTRIBUTES`. */
  readonly resourceAttributes: Readonly<Record<string, string>>;
}

const DEFAULT_OTLP_TRACES_URL = 'http://localhost:4318/v1/traces';
const SUPPORTED_PROTOCOL = 'http/protobuf';

/** Returns the trimmed value, or undefined when unset or blank (the spec treats empty as unset). */
function read(env: Env, name: string): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
}

/** Parses a W3C-baggage-like `k=v,k2=v2` list (percent-decoded), reporting bad entries without their values. */
function parseKeyValueList(raw: string, variable: string, problems: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  raw.split(',').forEach((entry, index) => {
    if (entry.trim() === '') return;
    const eq = entry.indexOf('=');
    if (eq <= 0) {
      problems.push(`${variable}: entry #${index + 1} is not of the form key=value`);
      return;
    }
    try {
      const key = decodeURIComponent(entry.slice(0, eq).trim());
      out[key] = decodeURIComponent(entry.slice(eq + 1).trim());
    } catch {
      // The cause (a URIError) would echo the value, which may be a secret: report the position only.
      problems.push(`${variable}: entry #${index + 1} is not valid percent-encoding`);
    }
  });
  return out;
}

function validUrl(raw: string, variable: string, problems: string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`${variable}: '${raw}' is not a URL`);
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    problems.push(`${variable}: '${raw}' must be an http:// or https:// URL`);
    return undefined;
  }
  return raw;
}

/**
 * Reads and validates the standard OpenTelemetry SDK variables that splitlet supports, following
 * https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/ :
 *
 * - `OTEL_SDK_DISABLED` (`true`/`false`).
 * - `OTEL_TRACES_EXPORTER`: `otlp` or `none`. @default `otlp` when an endpoint is set, else none.
 * - `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) or `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces`).
 *   @default `http://localhost:4318/v1/traces` when `OTEL_TRACES_EXPORTER=otlp` names no endpoint.
 * - `OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL`: only `http/protobuf` is supported.
 * - `OTEL_EXPORTER_OTLP[_TRACES]_HEADERS`, `OTEL_EXPORTER_OTLP[_TRACES]_TIMEOUT` (ms).
 * - `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG`. @default `parentbased_always_on`, ratio 1.
 * - `OTEL_RESOURCE_ATTRIBUTES`.
 *
 * Unlike the SDK's own lenient parsing, an unsupported value is an error: a typo must not silently
 * turn tracing off. Pure: reads only `env`.
 *
 * @throws {@link TelemetryError} `InvalidConfig`, naming every bad variable and why (never a header value).
 */
export function readOtelEnv(env: Env): OtelSettings {
  const problems: string[] = [];

  let disabled = false;
  const sdkDisabled = read(env, 'OTEL_SDK_DISABLED');
  if (sdkDisabled !== undefined) {
    const v = sdkDisabled.toLowerCase();
    if (v === 'true') disabled = true;
    else if (v !== 'false') problems.push(`OTEL_SDK_DISABLED: '${sdkDisabled}' must be 'true' or 'false'`);
  }

  // Exporter selection.
  const exportersRaw = read(env, 'OTEL_TRACES_EXPORTER');
  let exporterList: string[] | undefined;
  if (exportersRaw !== undefined) {
    exporterList = exportersRaw
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter((s) => s !== '');
    for (const e of exporterList) {
      if (e !== 'otlp' && e !== 'none') {
        problems.push(`OTEL_TRACES_EXPORTER: '${e}' is not supported (use 'otlp' or 'none')`);
      }
    }
    if (exporterList.includes('none') && exporterList.length > 1) {
      problems.push(`OTEL_TRACES_EXPORTER: 'none' cannot be combined with other exporters`);
    }
  }

  const tracesEndpoint = read(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const baseEndpoint = read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  let endpoint: string | undefined;
  if (tracesEndpoint !== undefined) {
    endpoint = validUrl(tracesEndpoint, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', problems);
  } else if (baseEndpoint !== undefined) {
    const base = validUrl(baseEndpoint, 'OTEL_EXPORTER_OTLP_ENDPOINT', problems);
    if (base !== undefined) endpoint = `${base.endsWith('/') ? base : `${base}/`}v1/traces`;
  }
  const endpointGiven = tracesEndpoint !== undefined || baseEndpoint !== undefined;
  const wantOtlp = exporterList === undefined ? endpointGiven : exporterList.includes('otlp');

  let otlp: OtlpExportSettings | undefined;
  if (wantOtlp) {
    const protocolVar = read(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
    const protocol = read(env, protocolVar);
    if (protocol !== undefined && protocol !== SUPPORTED_PROTOCOL) {
      problems.push(`${protocolVar}: '${protocol}' is not supported; splitlet exports OTLP over '${SUPPORTED_PROTOCOL}' (port 4318 on a collector)`);
    }
    const headers: Record<string, string> = {};
    for (const name of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS']) {
      const raw = read(env, name);
      if (raw !== undefined) Object.assign(headers, parseKeyValueList(raw, name, problems));
    }
    let timeoutMillis: number | undefined;
    const timeoutVar = read(env, 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT' : 'OTEL_EXPORTER_OTLP_TIMEOUT';
    const timeoutRaw = read(env, timeoutVar);
    if (timeoutRaw !== undefined) {
      const n = Number(timeoutRaw);
      if (!Number.isInteger(n) || n <= 0) problems.push(`${timeoutVar}: '${timeoutRaw}' must be a positive integer (milliseconds)`);
      else timeoutMillis = n;
    }
    otlp = {
      url: endpoint ?? DEFAULT_OTLP_TRACES_URL,
      headers,
      ...(timeoutMillis === undefined ? {} : { timeoutMillis }),
    };
  }

  // Sampler.
  let sampler: SamplerName = 'parentbased_always_on';
  const samplerRaw = read(env, 'OTEL_TRACES_SAMPLER');
  if (samplerRaw !== undefined) {
    const s = samplerRaw.toLowerCase();
    if ((SamplerNames as readonly string[]).includes(s)) sampler = s as SamplerName;
    else problems.push(`OTEL_TRACES_SAMPLER: '${samplerRaw}' is not supported (use one of ${SamplerNames.join(', ')})`);
  }
  let samplerRatio = 1;
  const argRaw = read(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (argRaw !== undefined && sampler.endsWith('traceidratio')) {
    const r = Number(argRaw);
    if (!Number.isFinite(r) || r < 0 || r > 1) problems.push(`OTEL_TRACES_SAMPLER_ARG: '${argRaw}' must be a number from 0 to 1`);
    else samplerRatio = r;
  }

  const resourceRaw = read(env, 'OTEL_RESOURCE_ATTRIBUTES');
  const resourceAttributes = resourceRaw === undefined ? {} : parseKeyValueList(resourceRaw, 'OTEL_RESOURCE_ATTRIBUTES', problems);

  if (problems.length > 0) {
    throw new TelemetryError(TelemetryErrorCodes.InvalidConfig, `invalid OpenTelemetry configuration: ${problems.join('; ')}`);
  }
  return { disabled, otlp, sampler, samplerRatio, resourceAttributes };
}
