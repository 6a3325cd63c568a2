/**
 * Dead letters: an unprocessable message, copied with the reason to `Subjects.deadLetter(node,
 * process)` (stream `SL_DLQ`). The record and the logging are shared by every bus implementation.
 */
import { DeadLetter, Subjects, errorMessage } from '@splitlet/api';
import type { BusLogger, DeadLetterInput } from './bus.js';
import type { BusMetrics } from './metrics.js';
import { bodyText } from './codec.js';
import { subjectTemplate } from './trace.js';

/** Bodies longer than this are cut in the record (`payloadBytes` keeps the full size). */
const MAX_DEAD_LETTER_PAYLOAD = 64 * 1024;

/** What {@link sendDeadLetter} needs. */
export interface DeadLetterSender {
  readonly process: string;
  readonly node: string;
  readonly logger: BusLogger;
  readonly metrics: BusMetrics | undefined;
  /** Stores the encoded record on `subject` (JetStream). */
  store(subject: string, body: string): Promise<unknown>;
}

/** The validated record for `d`. */
export function deadLetterRecord(d: DeadLetterInput, process: string, now: Date = new Date()): DeadLetter {
  return DeadLetter.parse({
    type: 'kubelet.bus.DeadLetter.v1',
    subject: d.subject,
    reason: d.reason,
    payload: bodyText(d.data.subarray(0, MAX_DEAD_LETTER_PAYLOAD)),
    payloadBytes: d.data.byteLength,
    process,
    at: now.toISOString(),
    ...(d.stream !== undefined ? { stream: d.stream } : {}),
    ...(d.consumer !== undefined ? { consumer: d.consumer } : {}),
    ...(d.seq !== undefined ? { streamSequence: d.seq } : {}),
    ...(d.deliveries !== undefined ? { deliveryCount: d.deliveries } : {}),
  } satisfies DeadLetter);
}

/** Logs, counts and stores a dead letter; a failed store is logged, never thrown. */
export async function sendDeadLetter(s: DeadLetterSender, d: DeadLetterInput): Promise<void> {
  s.metrics?.deadLettered(subjectTemplate(d.subject));
  s.logger.error('dead-lettered a message', { subject: d.subject, reason: d.reason, stream: d.stream, seq: d.seq });
  try {
    await s.store(Subjects.deadLetter(s.node, s.process), JSON.stringify(deadLetterRecord(d, s.process)));
  } catch (e) {
    s.logger.error('could not publish dead letter', { subject: d.subject, error: errorMessage(e) });
  }
}
