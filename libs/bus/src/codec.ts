/**
 * zod at both ends of the bus: encode (validate, then JSON) before sending, decode (JSON, then
 * validate) on receipt. Shared by every implementation of the bus.
 */
import type { z } from 'zod';
import { errorMessage } from '@splitlet/api';
import { BusError } from './errors.js';

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

/** Formats zod issues as `path: message; …`. */
export function formatIssues(err: z.ZodError): string {
  return err.issues
    .slice(0, 8)
    .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

/** Validates `msg` and encodes it as JSON. Throws BusError SchemaInvalid (nothing to send) when invalid. */
export function encodeMessage<S extends z.ZodType>(schema: S, subject: string, msg: unknown): Uint8Array {
  const parsed = schema.safeParse(msg);
  if (!parsed.success) {
    throw new BusError('SchemaInvalid', `refusing to send an invalid message on ${subject}: ${formatIssues(parsed.error)}`);
  }
  return textEncoder.encode(JSON.stringify(parsed.data));
}

/** Decodes and validates a received body; the reason names the subject and the first issues. */
export function decodeMessage<T>(schema: z.ZodType<T>, subject: string, data: Uint8Array): { ok: true; value: T } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(textDecoder.decode(data));
  } catch (e) {
    return { ok: false, reason: `message on ${subject} is not valid JSON: ${errorMessage(e)}` };
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) return { ok: false, reason: `message on ${subject} does not match its schema: ${formatIssues(parsed.error)}` };
  return { ok: true, value: parsed.data };
}

/** UTF-8 text of a body. */
export function bodyText(data: Uint8Array): string {
  return textDecoder.decode(data);
}
