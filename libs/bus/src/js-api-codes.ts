/**
 * The JetStream API error codes (`api_error.err_code`) the bus reacts to, by name. The client's
 * `JetStreamApiCodes` lacks the "already in use" ones; the values come from nats-server
 * `server/errors.json`.
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';

export const JsApiCodes = {
  StreamNotFound: JetStreamApiCodes.StreamNotFound,
  StreamWrongLastSequence: JetStreamApiCodes.StreamWrongLastSequence,
  StreamWrongLastSequenceUnknown: JetStreamApiCodes.StreamWrongLastSequenceUnknown,
  /** A message get or delete found no message at that sequence. */
  NoMessageFound: JetStreamApiCodes.NoMessageFound,
  /** `NewJSStreamNameExistError`: a stream with that name exists (with another config). */
  StreamNameInUse: 10058,
  /** `NewJSConsumerNameExistError`: a consumer with that name exists (created concurrently). */
  ConsumerNameInUse: 10148,
} as const;
export type JsApiCode = (typeof JsApiCodes)[keyof typeof JsApiCodes];

/** Type guard: a JetStream API error with one of `codes`. */
export function isJsApiError(e: unknown, ...codes: JsApiCode[]): e is JetStreamApiError {
  return e instanceof JetStreamApiError && (codes.length === 0 || codes.includes(e.code as JsApiCode));
}

/** A compare-and-swap on a subject's last sequence failed (KV create/update/delete, expected-sequence publish). */
export function isWrongLastSequence(e: unknown): boolean {
  return isJsApiError(e, JsApiCodes.StreamWrongLastSequence, JsApiCodes.StreamWrongLastSequenceUnknown);
}
