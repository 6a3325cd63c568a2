/**
 * The node's pressure conditions from its eviction thresholds (evictionHard): what the kubelet's
 * eviction manager computes every 10 s for MemoryPressure, DiskPressure and PIDPressure. splitlet
 * reports the conditions; it does not evict pods.
 *
 * Models pkg/kubelet/eviction (signals memory.available, nodefs.available, nodefs.inodesFree,
 * pid.available; thresholdsMet; nodeConditionsObservedSince with evictionPressureTransitionPeriod).
 */
import { quantityValue } from '@splitlet/kube';

/** One measurement of the node's eviction signals. */
export interface PressureObservation {
  /** memory.available and the memory capacity, in bytes. */
  readonly memoryAvailableBytes: number;
  readonly memoryCapacityBytes: number;
  /** nodefs (the kubelet root directory's filesystem): available and total bytes, free and total inodes. */
  readonly nodefsAvailableBytes: number;
  readonly nodefsCapacityBytes: number;
  readonly nodefsInodesFree: number;
  readonly nodefsInodes: number;
  /** pid.available = the PID limit − running processes, and the PID limit. */
  readonly pidAvailable: number;
  readonly pidMax: number;
}

/** Which conditions hold. */
export interface NodePressure {
  readonly memory: boolean;
  readonly disk: boolean;
  readonly pid: boolean;
}

/** A threshold (`100Mi`, `10%`) against a signal's capacity, in the signal's unit. */
export function thresholdValue(threshold: string, capacity: number): number {
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(threshold);
  if (pct !== null) return (Number(pct[1]) / 100) * capacity;
  return quantityValue(threshold);
}

/**
 * Which thresholds the observation crosses (a signal below its threshold): memory.available for
 * MemoryPressure, nodefs.available or nodefs.inodesFree for DiskPressure, pid.available for
 * PIDPressure. A signal without a threshold never crosses.
 */
export function thresholdsMet(thresholds: Readonly<Record<string, string>>, o: PressureObservation): NodePressure {
  const below = (signal: string, value: number, capacity: number): boolean => {
    const t = thresholds[signal];
    return t !== undefined && capacity > 0 && value < thresholdValue(t, capacity);
  };
  return {
    memory: below('memory.available', o.memoryAvailableBytes, o.memoryCapacityBytes),
    disk: below('nodefs.available', o.nodefsAvailableBytes, o.nodefsCapacityBytes) || below('nodefs.inodesFree', o.nodefsInodesFree, o.nodefsInodes),
    pid: below('pid.available', o.pidAvailable, o.pidMax),
  };
}

/**
 * Keeps each condition true for `transitionMs` after its threshold was last crossed, so a node
 * hovering at a threshold does not flap (evictionPressureTransitionPeriod, 5 min by default).
 */
export class PressureTracker {
  readonly #transitionMs: number;
  readonly #lastMet: Record<keyof NodePressure, number | undefined> = { memory: undefined, disk: undefined, pid: undefined };

  constructor(transitionMs: number) {
    this.#transitionMs = transitionMs;
  }

  /** Records the thresholds met at `nowMs` and returns the conditions. */
  observe(met: NodePressure, nowMs: number): NodePressure {
    const held = (k: keyof NodePressure): boolean => {
      if (met[k]) this.#lastMet[k] = nowMs;
      const last = this.#lastMet[k];
      return last !== undefined && nowMs - last < Math.max(this.#transitionMs, 1);
    };
    return { memory: held('memory'), disk: held('disk'), pid: held('pid') };
  }
}
