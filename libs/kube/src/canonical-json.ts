/**
 * Deterministic JSON: object keys sorted, `undefined` members dropped, arrays kept in order.
 *
 * Models pkg/util/hash/hash.go (DeepHashObject's role: a stable byte form of an object to hash).
 * The bytes differ from Go's spew dump; only determinism matters here.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(normalise(value)) ?? 'null';
}

function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : normalise(v)));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = normalise(v);
    }
    return out;
  }
  return value;
}

/**
 * Structural equality over JSON-like values, ignoring members that are `undefined`.
 *
 * Models reflect.DeepEqual as pkg/kubelet/config/config.go uses it on API objects.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}
