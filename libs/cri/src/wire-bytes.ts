/**
 * Responses sent as bytes encoded beforehand: a server whose list replies are mostly the same items
 * call after call (the simulator, listed every second by the PLEG) encodes each item once and frames
 * the reply from those bytes, instead of converting and encoding every item on every call.
 *
 * The bytes are the protobuf encoding of the response message (the items framed as its repeated
 * field), so the wire carries exactly what encoding the response object would have produced.
 */
import { loadCriDefinition } from './proto.js';

// Registered, so a copy of this module loaded twice (src and dist) still finds what the other attached.
const WIRE_BYTES = Symbol.for('splitlet.cri.wireBytes');

/** Attaches `bytes`, the response's own protobuf encoding, for {@link serveCri} to send as they are. */
export function withWireBytes<T extends object>(response: T, bytes: Uint8Array): T {
  Object.defineProperty(response, WIRE_BYTES, { value: bytes, enumerable: false });
  return response;
}

/** The bytes {@link withWireBytes} attached to `response`, if any. */
export function wireBytesOf(response: unknown): Uint8Array | undefined {
  if (typeof response !== 'object' || response === null) return undefined;
  return (response as { [WIRE_BYTES]?: Uint8Array })[WIRE_BYTES];
}

/** The protobuf encoder of a CRI message type (`runtime.v1.Container`), from the proto served. */
export function criMessageEncoder(typeName: string): (message: object) => Uint8Array {
  const def = loadCriDefinition()[typeName];
  if (def === undefined || !('format' in def) || def.format !== 'Protocol Buffer 3 DescriptorProto') throw new Error(`the CRI proto has no message ${typeName}`);
  const serialize = def.serialize;
  return (message) => serialize(message);
}

/**
 * A message whose only content is repeated message field `field` holding `items` (each an encoded
 * message), as protobuf encodes it: per item the field's tag (wire type 2), its length, its bytes.
 */
export function encodeRepeatedField(field: number, items: readonly Uint8Array[]): Buffer {
  const tag = varint((field << 3) | 2);
  let size = 0;
  const lengths = items.map((item) => {
    const len = varint(item.byteLength);
    size += tag.byteLength + len.byteLength + item.byteLength;
    return len;
  });
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const [i, item] of items.entries()) {
    out.set(tag, at);
    at += tag.byteLength;
    const len = lengths[i] as Uint8Array;
    out.set(len, at);
    at += len.byteLength;
    out.set(item, at);
    at += item.byteLength;
  }
  return out;
}

/** An unsigned base-128 varint. */
function varint(n: number): Uint8Array {
  const bytes: number[] = [];
  let v = n;
  while (v > 0x7f) {
    bytes.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  bytes.push(v);
  return Uint8Array.from(bytes);
}
