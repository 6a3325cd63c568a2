/**
 * Watches one running splitlet node from the test process: its pods (the same buckets `splitlet get
 * pods` reads, polled about every 100 ms) with the time each status was first seen, and every event it
 * records (followed from the events stream). Cheaper and finer-grained than spawning the CLI to poll.
 */
import { KubeEventMessage, Streams, Subjects, kubeEventsOf, type KubeEvent } from '@splitlet/api';
import type { Pod } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import { listPods } from '../../../services/cli/src/node-view.ts';
import { connectCliBus } from '../../../services/cli/src/target.ts';
import type { NatsCredential } from '@splitlet/bus';
import type { InstanceInfo } from '../../../services/cli/src/state-dir.ts';

/** A pod's status as observed at `at` (ms since the epoch). */
export interface Observation {
  readonly at: number;
  readonly pod: Pod;
}

/** The node's pods and events, as the test sees them. */
export class NodeObserver {
  readonly #bus: Bus;
  readonly #node: string;
  readonly #ac = new AbortController();
  readonly #history = new Map<string, Observation[]>();
  readonly #latest = new Map<string, Pod>();
  readonly #events: KubeEvent[] = [];
  #pollError: unknown;
  #slowestPollMs = 0;
  #loop: Promise<void> = Promise.resolve();
  #follow: Promise<void> = Promise.resolve();

  private constructor(bus: Bus, node: string) {
    this.#bus = bus;
    this.#node = node;
  }

  /** Connects to the instance's NATS and starts polling pods and following events. */
  static async start(info: InstanceInfo, credential?: NatsCredential): Promise<NodeObserver> {
    const o = new NodeObserver(await connectCliBus(info.natsUrl, info.nodeName, undefined, credential), info.nodeName);
    o.#loop = o.#poll();
    o.#follow = o.#bus
      .readStream(KubeEventMessage, Streams.events, Subjects.eventsAll(info.nodeName), (m) => o.#events.push(...kubeEventsOf(m)), { follow: true, signal: o.#ac.signal })
      .catch((e: unknown) => {
        if (!o.#ac.signal.aborted) o.#pollError = e;
      });
    return o;
  }

  /**
   * Two staggered loops poll `listPods`: a KV listing sometimes stalls for its 5 s guard while the
   * bucket is being written (libs/bus KvBucket.list), and the other loop keeps the view current
   * meanwhile. A result is applied only if its poll started after the last applied one.
   */
  async #poll(): Promise<void> {
    const loop = async (offsetMs: number): Promise<void> => {
      await new Promise((r) => setTimeout(r, offsetMs));
      while (!this.#ac.signal.aborted) {
        await this.#pollOnce();
        await new Promise((r) => setTimeout(r, 150));
      }
    };
    await Promise.all([loop(0), loop(75)]);
  }

  #lastApplied = 0;

  async #pollOnce(): Promise<void> {
    const signal = this.#ac.signal;
    try {
      const started = performance.now();
      const views = await listPods(this.#bus, this.#node);
      this.#slowestPollMs = Math.max(this.#slowestPollMs, performance.now() - started);
      if (started < this.#lastApplied) return; // a newer poll was applied meanwhile
      this.#lastApplied = started;
      const at = Date.now();
      const seen = new Set<string>();
      for (const v of views) {
        const name = v.pod.metadata.name ?? '';
        seen.add(name);
        const before = this.#latest.get(name);
        if (before === undefined || JSON.stringify(before.status) !== JSON.stringify(v.pod.status)) {
          const h = this.#history.get(name) ?? [];
          h.push({ at, pod: v.pod });
          this.#history.set(name, h);
        }
        this.#latest.set(name, v.pod);
      }
      for (const name of [...this.#latest.keys()]) if (!seen.has(name)) this.#latest.delete(name);
    } catch (e) {
      if (signal.aborted) return;
      this.#pollError = e;
    }
  }

  /** The pod by its full name (`<name>-<node>`), as last polled. */
  pod(name: string): Pod | undefined {
    return this.#latest.get(name);
  }

  /** Every status change of the pod, oldest first. */
  history(name: string): readonly Observation[] {
    return this.#history.get(name) ?? [];
  }

  /** The events recorded so far, in stream order. */
  events(filter?: (e: KubeEvent) => boolean): KubeEvent[] {
    return filter === undefined ? [...this.#events] : this.#events.filter(filter);
  }

  /** Resolves once a poll that started after this call was applied (`pod()` reflects the node as of now). */
  async fresh(): Promise<void> {
    const now = performance.now();
    while (this.#lastApplied <= now) {
      if (this.#ac.signal.aborted) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** The longest a poll of the pods took (ms): the observer's own lag. */
  get slowestPollMs(): number {
    return Math.round(this.#slowestPollMs);
  }

  /** A polling or streaming failure, if any happened. */
  get error(): unknown {
    return this.#pollError;
  }

  async stop(): Promise<void> {
    this.#ac.abort();
    await Promise.all([this.#loop, this.#follow]);
    await this.#bus.close();
  }
}
