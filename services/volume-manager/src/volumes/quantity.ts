/**
 * Byte quantities (`64Mi`, `1G`, `1073741824`) for tmpfs sizes.
 *
 * Models resource.Quantity.Value (rounded up to a whole byte).
 */
import { quantityValue } from '@splitlet/kube';

/** The quantity in bytes, rounded up. Throws on a malformed quantity. */
export function parseByteQuantity(q: string | number): number {
  return quantityValue(q);
}
