/**
 * Publishes this node's capacity (cpu, memory, ephemeral-storage, pods) for admission. sync-loop may
 * run anywhere (compose, k8s), so it cannot measure the node; volume-manager runs on the node and
 * owns the kubelet root directory, whose filesystem is the node's ephemeral storage (nodefs).
 *
 * Models pkg/kubelet/nodestatus/setters.go MachineInfo (capacity from cadvisor's machine info and
 * the root filesystem, `pods` = maxPods; allocatable = capacity unless configured lower).
 */
import type { NodeCapacity, NodeResources } from '@splitlet/api';
import { sleep, type Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { NodeCapacityStore, NodeProbe } from '../ports.js';
import { PressureTracker, thresholdsMet, type PressureObservation } from './node-pressure.js';

/** The pressure conditions' inputs: the node's eviction signals and thresholds. */
export interface PressureOptions {
  /** Measures the eviction signals now. */
  readonly observe: () => Promise<PressureObservation>;
  /** evictionHard, e.g. `{ 'memory.available': '100Mi', 'nodefs.available': '10%' }`. */
  readonly thresholds: Readonly<Record<string, string>>;
  /** evictionPressureTransitionPeriod. */
  readonly transitionMs: number;
}

/** Allocatable overrides from the node's configuration (`NODE_CPU`, `NODE_MEMORY`, `NODE_EPHEMERAL_STORAGE`). */
export interface AllocatableOverrides {
  readonly cpu?: string | undefined;
  readonly memory?: string | undefined;
  readonly ephemeralStorage?: string | undefined;
}

/** Options of {@link NodeCapacityPublisher}. */
export interface NodeCapacityPublisherOptions {
  readonly node: string;
  /** The kubelet root directory; its filesystem's size is the ephemeral-storage capacity. */
  readonly rootDir: string;
  /** maxPods: the `pods` capacity. */
  readonly maxPods: number;
  readonly overrides: AllocatableOverrides;
  readonly probe: NodeProbe;
  readonly store: NodeCapacityStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How often the node is measured again (a record is written only when it changed). @default 10000 (nodeStatusUpdateFrequency) */
  readonly periodMs?: number;
  /** The eviction signals behind the pressure conditions; absent: no `pressure` in the record. */
  readonly pressure?: PressureOptions;
  /** The record is rewritten at least this often even unchanged (its `observedAt` shows the node is measured). @default 20000 */
  readonly heartbeatMs?: number;
}

/** Measures and publishes; one writer per node. Not for concurrent use (one loop calls it). */
export class NodeCapacityPublisher {
  readonly #o: NodeCapacityPublisherOptions;
  #published: string | undefined;
  #publishedAt = 0;
  readonly #tracker: PressureTracker | undefined;

  constructor(options: NodeCapacityPublisherOptions) {
    this.#o = options;
    this.#tracker = options.pressure === undefined ? undefined : new PressureTracker(options.pressure.transitionMs);
  }

  /** Measures the node now and writes the record when it differs from the last one written. */
  async publish(): Promise<NodeCapacity> {
    const { probe, overrides } = this.#o;
    const capacity: NodeResources = {
      cpu: String(probe.cpuCount()),
      memory: String(probe.memoryBytes()),
      'ephemeral-storage': String(await probe.filesystemBytes(this.#o.rootDir)),
      pods: String(this.#o.maxPods),
    };
    const allocatable: NodeResources = {
      cpu: overrides.cpu ?? capacity.cpu,
      memory: overrides.memory ?? capacity.memory,
      'ephemeral-storage': overrides.ephemeralStorage ?? capacity['ephemeral-storage'],
      pods: capacity.pods,
    };
    const now = this.#o.clock.now();
    let pressure: NodeCapacity['pressure'];
    const p = this.#o.pressure;
    if (p !== undefined && this.#tracker !== undefined) {
      const observation = await p.observe();
      pressure = this.#tracker.observe(thresholdsMet(p.thresholds, observation), now);
    }
    const record: NodeCapacity = {
      type: 'kubelet.node.NodeCapacity.v1',
      node: this.#o.node,
      capacity,
      allocatable,
      observedAt: new Date(now).toISOString(),
      ...(pressure === undefined ? {} : { pressure }),
    };
    const fingerprint = JSON.stringify([capacity, allocatable, pressure]);
    const changed = fingerprint !== this.#published;
    if (changed || now - this.#publishedAt >= (this.#o.heartbeatMs ?? 20_000)) {
      await this.#o.store.put(record);
      if (changed) this.#o.logger.info('node capacity published', { capacity, allocatable, ...(pressure === undefined ? {} : { pressure }) });
      this.#published = fingerprint;
      this.#publishedAt = now;
    }
    return record;
  }

  /** Measures again every period until `signal` aborts; a failed round is logged and retried next period. */
  async run(signal: AbortSignal): Promise<void> {
    while (await sleep(this.#o.periodMs ?? 10_000, signal, this.#o.clock)) {
      try {
        await this.publish();
      } catch (e) {
        this.#o.logger.warn('could not publish the node capacity', { err: e });
      }
    }
  }
}
