/**
 * Time formatting the way the API and the kubelet write times.
 *
 * Models k8s.io/apimachinery metav1.Time (RFC3339, whole seconds, UTC) and
 * pkg/kubelet/types/timestamp.go (RFC3339Nano).
 */

/**
 * `ms` since the epoch as RFC3339 with whole seconds in UTC, e.g. `2024-05-01T10:00:00Z` (metav1.Time's
 * JSON form; sub-second precision is truncated).
 *
 * Models metav1.Time.MarshalJSON.
 */
export function rfc3339(ms: number): string {
  const d = new Date(Math.floor(ms / 1000) * 1000);
  return d.toISOString().replace('.000Z', 'Z');
}

/**
 * `ms` since the epoch as Go's RFC3339Nano in UTC: trailing zeros of the fraction are dropped, and so
 * is the dot when the fraction is zero (e.g. `2024-05-01T10:00:00.12Z`, `2024-05-01T10:00:00Z`).
 *
 * Models pkg/kubelet/types/timestamp.go (Timestamp.GetString).
 */
export function rfc3339Nano(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2024-05-01T10:00:00.120Z
  const [head, frac = '000Z'] = iso.split('.');
  const digits = frac.slice(0, -1).replace(/0+$/, '');
  return digits === '' ? `${head}Z` : `${head}.${digits}Z`;
}

/**
 * Parses an RFC3339 time to milliseconds; `undefined` for a missing, null or unparsable value.
 *
 * Models metav1.Time.UnmarshalJSON (a null time is the zero time).
 */
export function parseTime(s: string | null | undefined): number | undefined {
  if (s === undefined || s === null || s === '') return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
}

/**
 * A duration in milliseconds as Go's `time.Duration.String()` prints it: `10s`, `1m20s`, `5m0s`,
 * `1h0m0s`, `500ms`, `0s`.
 *
 * Models time.Duration.String (used in "back-off 20s restarting failed container=…").
 */
export function formatGoDuration(ms: number): string {
  if (ms === 0) return '0s';
  const neg = ms < 0;
  let rest = Math.abs(ms);
  if (rest < 1000) return `${neg ? '-' : ''}${trimFloat(rest)}ms`;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = trimFloat(rest / 1000);
  let out = '';
  if (hours > 0) out += `${hours}h${minutes}m`;
  else if (minutes > 0) out += `${minutes}m`;
  out += `${seconds}s`;
  return (neg ? '-' : '') + out;
}

function trimFloat(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Number(n.toFixed(9)));
}
