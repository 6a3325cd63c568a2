/**
 * Core-NATS pokes on `sl.<node>.plegrelist` (cri-adapter sends one after every runtime change).
 */
import { Subjects } from '@splitlet/api';
import type { NatsBus } from '@splitlet/bus';

/** Calls `onPoke` for every poke until `signal` aborts. The payload is ignored. */
export function subscribeRelistPokes(bus: Pick<NatsBus, 'subscribeCore'>, node: string, onPoke: () => void, signal: AbortSignal): void {
  bus.subscribeCore(Subjects.plegRelist(node), () => onPoke(), signal);
}
