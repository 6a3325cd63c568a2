/**
 * Exact parsing of resource quantities (`100m`, `0.5`, `128Mi`, `1G`, `1e3`).
 *
 * Models k8s.io/apimachinery/pkg/api/resource/quantity.go (ParseQuantity, Value, MilliValue).
 */
import { KubeError } from './errors.js';

/**
 * A parsed quantity as an exact fraction `num / den` (den > 0).
 *
 * Models k8s.io/apimachinery/pkg/api/resource/quantity.go (Quantity, as an exact fraction).
 */
export interface Quantity {
  readonly num: bigint;
  readonly den: bigint;
}

const BINARY: Readonly<Record<string, bigint>> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};
const DECIMAL: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

/**
 * Parses a quantity exactly. Accepts a number (as a manifest may carry `cpu: 2`) or a string of a
 * signed decimal number followed by a binary-SI (`Ki`…`Ei`), decimal-SI (`n u m k M G T P E`) or
 * decimal-exponent (`e3`, `E-2`) suffix. Throws a {@link KubeError} `InvalidQuantity` otherwise,
 * with resource.ParseQuantity's message "quantities must match the regular expression …".
 *
 * Models resource.ParseQuantity.
 */
export function parseQuantity(q: string | number): Quantity {
  const s = typeof q === 'number' ? String(q) : q;
  const m = /^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$/.exec(s);
  const intPart = m?.[2] ?? '';
  const fracPart = m?.[3] ?? '';
  if (m === null || (intPart === '' && fracPart === '')) throw invalid(s);
  const sign = m[1] === '-' ? -1n : 1n;
  const suffix = m[4] ?? '';
  let num = sign * BigInt(`${intPart}${fracPart}` || '0');
  let den = 10n ** BigInt(fracPart.length);
  const bin = BINARY[suffix];
  if (bin !== undefined) {
    num *= bin;
  } else {
    let exp: number | undefined = DECIMAL[suffix];
    if (exp === undefined) {
      const e = /^[eE]([+-]?[0-9]+)$/.exec(suffix);
      if (e === null) throw invalid(s);
      exp = Number(e[1]);
    }
    if (exp >= 0) num *= 10n ** BigInt(exp);
    else den *= 10n ** BigInt(-exp);
  }
  return { num, den };
}

/**
 * The quantity scaled by 1000 and rounded up (away from zero), e.g. CPU in millicores:
 * `"100m"` → 100, `"0.5"` → 500, `2` → 2000, `"1.0001m"` → 2.
 *
 * Models resource.Quantity.MilliValue.
 */
export function milliValue(q: string | number | Quantity): number {
  const v = typeof q === 'object' ? q : parseQuantity(q);
  return Number(ceilDiv(v.num * 1000n, v.den));
}

/**
 * The quantity rounded up to an integer (away from zero), e.g. memory in bytes:
 * `"128Mi"` → 134217728, `"1G"` → 1000000000, `"1e3"` → 1000, `"1.5"` → 2.
 *
 * Models resource.Quantity.Value.
 */
export function quantityValue(q: string | number | Quantity): number {
  const v = typeof q === 'object' ? q : parseQuantity(q);
  return Number(ceilDiv(v.num, v.den));
}

/**
 * The integer amount of a named resource: millicores for `cpu`, whole units (bytes, count) for
 * everything else (`memory`, `ephemeral-storage`, `pods`, extended resources).
 *
 * Models pkg/scheduler/framework types.go (Resource.Add: MilliValue for cpu, Value otherwise).
 */
export function resourceAmount(resourceName: string, q: string | number): number {
  return resourceName === 'cpu' ? milliValue(q) : quantityValue(q);
}

function ceilDiv(n: bigint, d: bigint): bigint {
  const q = n / d;
  if (q * d === n) return q;
  return n > 0n ? q + 1n : q - 1n;
}

function invalid(s: string): KubeError {
  return new KubeError('InvalidQuantity', `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': ${JSON.stringify(s)}`);
}
