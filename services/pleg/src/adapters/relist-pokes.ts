/**
 * Core-NATS pokes on `sl.<node>.plegrelist` (cri-adapter sends one after every runtime change).
 */
import { trace, type Context } from '@opentelemetry/api';
import { Subjects } from '@splitlet/api';
import { contextFromHeaders, type Bus } from '@splitlet/bus';

/**
 * Calls `onPoke` for every poke until `signal` aborts, with the poke's trace context when its NATS
 * headers carry one (`undefined` otherwise). The payload is ignored.
 */
export function subscribeRelistPokes(
  bus: Pick<Bus, 'subscribeCore'>,
  node: string,
  onPoke: (trigger: Context | undefined) => void,
  signal: AbortSignal,
): void {
  bus.subscribeCore(
    Subjects.plegRelist(node),
    (_data, msg) => {
      const ctx = contextFromHeaders(msg.headers);
      const sc = trace.getSpanContext(ctx);
      onPoke(sc !== undefined && trace.isSpanContextValid(sc) ? ctx : undefined);
    },
    signal,
  );
}
