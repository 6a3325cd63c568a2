/** What a secret value is replaced with. */
export const REDACTED = '[REDACTED]';

/** Substrings that mark a key as secret once lower-cased and stripped of `_`, `-`, `.` and spaces. */
const SECRET_SUBSTRINGS = [
  'password',
  'passwd',
  'passphrase',
  'secret',
  'token',
  'authorization',
  'credential',
  'dockerconfigjson',
  'dockercfg',
  'apikey',
  'privatekey',
  'cookie',
  'sessionid',
] as const;

/** Whole words (camelCase or separator boundaries) that mark a key as secret: `basicAuth`, `db_pass`. */
const SECRET_WORDS = new Set(['auth', 'pass', 'pwd', 'pin', 'otp']);

/**
 * True when a key names a value that must never be logged: password, token, secret,
 * authorization, auth, credentials, `.dockerconfigjson`, api keys, private keys, cookies… The test
 * is deliberately wide (`maxTokens` is redacted too); a false positive costs a log field, a false
 * negative leaks a secret (DESIGN.md §4 invariant 6).
 */
export function isSecretKey(key: string): boolean {
  let secret = verdicts.get(key);
  if (secret === undefined) {
    secret = judgeKey(key);
    // Keys are attribute and field names, a small set: the verdicts are kept, up to a bound.
    if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
    verdicts.set(key, secret);
  }
  return secret;
}

/** At most this many keys' verdicts are kept (then the memory starts over). */
const MAX_VERDICTS = 4096;
const verdicts = new Map<string, boolean>();

function judgeKey(key: string): boolean {
  const compact = key.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (SECRET_SUBSTRINGS.some((s) => compact.includes(s))) return true;
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/);
  return words.some((w) => SECRET_WORDS.has(w));
}

const MAX_DEPTH = 12;

function errorToObject(e: Error): Record<string, unknown> {
  const out: Record<string, unknown> = { type: e.name, message: e.message };
  const extra = e as Error & { code?: unknown; retryable?: unknown };
  if (extra.code !== undefined) out['code'] = extra.code;
  if (extra.retryable !== undefined) out['retryable'] = extra.retryable;
  if (e.stack !== undefined) out['stack'] = e.stack;
  if (e.cause !== undefined) out['cause'] = e.cause;
  // Own enumerable properties of custom errors (e.g. `issues`), after the standard ones.
  for (const [k, v] of Object.entries(e)) if (!(k in out)) out[k] = v;
  return out;
}

function walk(value: unknown, depth: number, ancestors: object[]): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return value;
  if (ancestors.includes(value)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[Truncated]';
  if (value instanceof Uint8Array) return `[${value.byteLength} bytes]`;
  const next = [...ancestors, value];
  if (value instanceof Error) return walkObject(errorToObject(value), depth, next);
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return walk((toJSON as () => unknown).call(value), depth + 1, next);
  if (Array.isArray(value)) return value.map((v) => walk(v, depth + 1, next));
  if (value instanceof Map) return walkObject(Object.fromEntries(value as Map<PropertyKey, unknown>), depth, next);
  if (value instanceof Set) return [...value].map((v) => walk(v, depth + 1, next));
  return walkObject(value as Record<string, unknown>, depth, next);
}

function walkObject(obj: Record<string, unknown>, depth: number, ancestors: object[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    out[k] = isSecretKey(k) && v !== undefined && v !== null ? REDACTED : walk(v, depth + 1, ancestors);
  }
  return out;
}

/**
 * Returns a JSON-safe copy of `value` in which the value of every secret key (see
 * {@link isSecretKey}), at any depth, is replaced by `"[REDACTED]"`. Errors become
 * `{type, message, code?, retryable?, stack, cause?}`, bigints strings, byte arrays a length,
 * cycles `"[Circular]"`; nesting deeper than 12 levels is cut. Never mutates its input.
 */
export function redact(value: unknown): unknown {
  return walk(value, 0, []);
}
