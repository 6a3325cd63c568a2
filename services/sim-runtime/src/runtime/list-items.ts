/**
 * The List replies' items, made and encoded once per record state.
 *
 * The PLEG lists every sandbox and container each second; converting and encoding a thousand
 * unchanged items per call was most of an idle simulator's CPU. A record's List item changes only
 * with its state (its id, metadata, labels, annotations, image and creation time are fixed at
 * creation), so the item and its protobuf bytes are kept per record and remade when the state moved.
 * A reply then carries its wire bytes framed from the items' (serveCri sends them as they are).
 */
import { encodeRepeatedField, withWireBytes } from '@splitlet/cri';

/** A List item and its protobuf encoding. Items are frozen: every reply that lists the record shares it. */
export interface EncodedItem<I> {
  readonly item: I;
  readonly bytes: Uint8Array;
}

/** Items of records of type `R` in state `S`: remade when the record's state is not the one they were made in. */
export class ListItemCache<R extends object, S, I extends object> {
  readonly #entries = new WeakMap<R, EncodedItem<I> & { readonly state: S }>();
  readonly #stateOf: (record: R) => S;
  readonly #make: (record: R) => I;
  readonly #encode: (item: I) => Uint8Array;

  constructor(stateOf: (record: R) => S, make: (record: R) => I, encode: (item: I) => Uint8Array) {
    this.#stateOf = stateOf;
    this.#make = make;
    this.#encode = encode;
  }

  /** The record's item as of its current state. */
  get(record: R): EncodedItem<I> {
    const state = this.#stateOf(record);
    const known = this.#entries.get(record);
    if (known !== undefined && known.state === state) return known;
    const item = deepFreeze(this.#make(record));
    const entry = { state, item, bytes: this.#encode(item) };
    this.#entries.set(record, entry);
    return entry;
  }
}

/**
 * A List reply `{ [field]: items }` (the reply message's only member, repeated field number 1)
 * carrying its wire bytes.
 */
export function listReply<K extends string, I>(field: K, items: readonly EncodedItem<I>[]): Record<K, I[]> {
  const reply = { [field]: items.map((e) => e.item) } as Record<K, I[]>;
  return withWireBytes(
    reply,
    encodeRepeatedField(
      1,
      items.map((e) => e.bytes),
    ),
  );
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
