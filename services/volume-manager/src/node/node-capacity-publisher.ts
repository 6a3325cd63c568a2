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
}

/** Measures and publishes; one writer per node. Not for concurrent use (one loop calls it). */
export class NodeCapacityPublisher {
  readonly #o: NodeCapacityPublisherOptions;
  #published: string | undefined;

  constructor(options: NodeCapacityPublisherOptions) {
    this.#o = options;
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
    const record: NodeCapacity = {
      type: 'kubelet.node.NodeCapacity.v1',
      node: this.#o.node,
      capacity,
      allocatable,
      observedAt: new Date(this.#o.clock.now()).toISOString(),
    };
    const fingerprint = JSON.stringify([capacity, allocatable]);
    if (fingerprint !== this.#published) {
      await this.#o.store.put(record);
      this.#published = fingerprint;
      this.#o.logger.info('node capacity published', { capacity, allocatable });
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
