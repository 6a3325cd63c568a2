/**
 * FNV-1a hashes over UTF-8 bytes, as Go's hash/fnv computes them.
 *
 * Models hash/fnv (New32a, New128a) as pkg/kubelet/config/common.go and
 * pkg/kubelet/container/helpers.go use them.
 */

const OFFSET_128 = 0x6c62272e07bb014262b821756295c58dn;
const PRIME_128 = 0x0000000001000000000000000000013bn;
const MASK_128 = (1n << 128n) - 1n;
const encoder = new TextEncoder();

/**
 * FNV-1a 128-bit of the concatenated UTF-8 bytes of `parts`, as 32 lower-case hex digits (big endian,
 * like Go's `hex.EncodeToString(h.Sum(nil))`).
 *
 * Models hash/fnv New128a.
 */
export function fnv1a128Hex(...parts: string[]): string {
  let h = OFFSET_128;
  for (const part of parts) {
    for (const b of encoder.encode(part)) {
      h ^= BigInt(b);
      h = (h * PRIME_128) & MASK_128;
    }
  }
  return h.toString(16).padStart(32, '0');
}

/**
 * FNV-1a 32-bit of the UTF-8 bytes of `s`, as an unsigned number.
 *
 * Models hash/fnv New32a.
 */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (const b of encoder.encode(s)) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}
