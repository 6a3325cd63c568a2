/**
 * Core-NATS pokes on `sl.<node>.plegrelist` (cri-adapter sends one after every runtime change).
 */
import { trace, type Context } from '@opentelemetry/api';
import { PlegRelistPoke, Subjects } from '@splitlet/api';
import { contextFromHeaders, type Bus } from '@splitlet/bus';
import type { Logger } from '@splitlet/telemetry';

/**
 * Calls `onPoke` for every poke until `signal` aborts, with the poke's trace context when its NATS
 * headers carry one (`undefined` otherwise) and the pod UID its body names (PlegRelistPoke). A body
 * that is not a PlegRelistPoke is logged and still pokes, for a full relist.
 */
export function subscribeRelistPokes(
  bus: Pick<Bus, 'subscribeCore'>,
  node: string,
  onPoke: (trigger: Context | undefined, uid: string | undefined) => void,
  signal: AbortSignal,
  logger: Pick<Logger, 'warn'>,
): void {
  bus.subscribeCore(
    Subjects.plegRelist(node),
    (data, msg) => {
      const ctx = contextFromHeaders(msg.headers);
      const sc = trace.getSpanContext(ctx);
      const body = PlegRelistPoke.safeParse(data ?? {});
      if (!body.success) logger.warn('a relist poke with an invalid body; relisting every pod', { err: body.error.message });
      onPoke(sc !== undefined && trace.isSpanContextValid(sc) ? ctx : undefined, body.success ? body.data.uid : undefined);
    },
    signal,
  );
}
