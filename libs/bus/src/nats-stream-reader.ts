/** Reading a stream's stored messages with an ephemeral ordered consumer (see `Bus.readStream`). */
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { z } from 'zod';
import type { BusLogger, ReadStreamOptions, StoredMessageMeta } from './bus.js';
import { decodeMessage } from './codec.js';
import { errorMessage } from '@splitlet/api';

/**
 * Everything stored now on `filterSubject`, oldest first, then (with `follow`) new messages until
 * `signal` aborts. Messages that fail validation are skipped and reported to `onInvalid`.
 */
export async function readNatsStream<T>(
  js: JetStreamClient,
  jsm: JetStreamManager,
  logger: BusLogger,
  schema: z.ZodType<T>,
  stream: string,
  filterSubject: string,
  onMessage: (value: T, meta: StoredMessageMeta) => void,
  opts: ReadStreamOptions = {},
): Promise<void> {
  const info = await jsm.streams.info(stream, { subjects_filter: filterSubject }).catch((e: unknown) => {
    logger.debug('stream info failed; reading without a count', { stream, error: errorMessage(e) });
    return undefined;
  });
  const consumer = await js.consumers.get(stream, { filter_subjects: filterSubject });
  const pendingAtStart = info ? Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0) : undefined;
  if (!opts.follow && pendingAtStart === 0) return;
  const messages = await consumer.consume({ max_messages: 256 });
  const stop = (): void => void messages.close().catch(() => undefined);
  opts.signal?.addEventListener('abort', stop, { once: true });
  try {
    for await (const m of messages) {
      const parsed = decodeMessage(schema, m.subject, m.data);
      if (parsed.ok) onMessage(parsed.value, { subject: m.subject, seq: m.seq, time: m.time });
      else opts.onInvalid?.(parsed.reason);
      if (!opts.follow && m.info.pending === 0) break;
    }
  } finally {
    stop();
  }
}
