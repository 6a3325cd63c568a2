/**
 * Hands the runtime's container events to pleg (the evented PLEG), in order and numbered:
 *
 *   - each event's part of its pod's status (one sandbox and its containers) is coalesced per pod
 *     and sandbox over a short window, then sent as `RuntimeContainerEvents`;
 *   - while an operation (SyncPod, KillPod, a GC part) runs on the pod, its events' parts are held
 *     (at most `holdMs` once a container started or something stopped): at the end of a SyncPod or KillPod that changed the runtime (instead of a
 *     relist poke), the pod's whole status as the operation read it afterwards goes first
 *     (`RuntimePodOperated`, in the operation's trace), stamped later than the operation's reply so
 *     the pod-worker's next sync does not wait for a relist; then the held parts newer than that
 *     read, so pleg ends on the newest of both. A pod's start is then one message, not one per
 *     runtime change (each is a cache write that every runtime-cache watcher receives);
 *   - the stream's state (`RuntimeEventStreamState`): live when subscribed and every second while
 *     live (after sending whatever was pending: the global cache time — for every pod but those
 *     whose operation holds its events, whose worker waits for that operation anyway), down when
 *     it broke.
 *
 * Every message of one subscription carries its id and the next sequence number, so pleg tells a
 * lost message (a gap) or a new subscription (missed events) and relists.
 *
 *     events ──coalesce (window)──▶ ContainerEvents ┐
 *     SyncPod/KillPod end ─────────▶ PodOperated ───┼──▶ sl.<node>.runtimeevents.<uid>   (seq 1, 2, 3 …)
 *     every second ─flush─────────▶ state live ─────┘    sl.<node>.runtimeevents._stream
 */
import { ROOT_CONTEXT, context, type Context } from '@opentelemetry/api';
import { RUNTIME_CLOCK_SKEW_MS, type RuntimeEventMessage, type RuntimePodStatus } from '@splitlet/api';
import type { Clock, TimerHandle } from '@splitlet/service';
import type { ContainerEventPart } from '../kuberuntime/runtime-status-reader.js';
import type { RuntimeEventNotice, RuntimeEventSink } from './runtime-event-watcher.js';

/** Where the forwarder's messages go (the bus adapter validates and publishes them on their subjects). */
export interface RuntimeEventPublisher {
  /** Sends `message` with `ctx`'s trace context (none: no trace). Never throws. */
  send(message: RuntimeEventMessage, ctx: Context | undefined): void;
}

/** What an operation read after its changes (RuntimeOpResult.podStatus / statusReadAt, the reply's timestamp). */
export interface OperationObservation {
  readonly status: RuntimePodStatus;
  /** When the read started (ms since the epoch). */
  readonly readAt: number;
  /** The reply's `timestamp`. */
  readonly timestamp: number;
}

/** Dependencies and settings of {@link RuntimeEventForwarder}. */
export interface RuntimeEventForwarderOptions {
  readonly publisher: RuntimeEventPublisher;
  readonly clock: Clock;
  /** Events of one pod's sandbox closer together than this go out as one message. @default 10 */
  readonly coalesceMs?: number;
  /** How often the live state is sent. @default 1000 */
  readonly heartbeatMs?: number;
  /**
   * The longest an operation holds its pod's events back once one of them reports progress (a
   * container started, something stopped or deleted); after that they go out at the next heartbeat
   * (a long image pull of a second container must not hide the first one running). Creations alone
   * stay held until the operation ends. @default 1000
   */
  readonly holdMs?: number;
}

type EventEntry = RuntimeEventMessage & { type: 'kubelet.runtime.ContainerEvents.v1' };
type EventList = EventEntry['events'];

/**
 * Whether a part reports what someone may be waiting for — a container started, anything stopped or
 * deleted — rather than the creations an operation goes through before its containers run (which
 * stay held however long the operation takes).
 */
function isProgress(p: Pending): boolean {
  return p.events.some(
    (e) => e.event === 'CONTAINER_STOPPED_EVENT' || e.event === 'CONTAINER_DELETED_EVENT' || (e.event === 'CONTAINER_STARTED_EVENT' && e.containerId !== p.part.sandboxId),
  );
}

/** How long an operation's read keeps older events of its pod from being sent. */
export const READ_FLOOR_MS = 60_000;

/** At most this many events are coalesced into one message; more send it at once. */
export const MAX_EVENTS_PER_MESSAGE = 1024;

interface Pending {
  part: ContainerEventPart;
  events: EventList;
}

interface Operation {
  /** The operation's trace context. */
  readonly ctx: Context;
  readonly startedAt: number;
  /** The latest part of each of the pod's sandboxes received while the operation ran (held, or sent). */
  readonly parts: Map<string, Pending>;
  /** Whether its parts are still held back (until it ends or `holdMs` passed). */
  holding: boolean;
}

/** The forwarder. Single-threaded use (the watcher's events and the operations' hooks). */
export class RuntimeEventForwarder implements RuntimeEventSink {
  readonly #o: RuntimeEventForwarderOptions;
  #session: { id: string; seq: number } | undefined;
  /** Parts waiting for the window to close, by `<uid>/<sandboxId>`, oldest first. */
  readonly #pending = new Map<string, Pending>();
  readonly #ops = new Map<string, Operation>();
  /**
   * Per pod, when the last operation's read started: an event older than that reaching here after
   * the operation ended (the event stream lags behind replies under load) is not sent (the read saw
   * its change). Kept for {@link READ_FLOOR_MS}.
   */
  readonly #readAt = new Map<string, number>();
  #flushTimer: TimerHandle | undefined;
  #heartbeatTimer: TimerHandle | undefined;

  constructor(options: RuntimeEventForwarderOptions) {
    this.#o = options;
  }

  /** True while the runtime's events reach pleg (a subscription is live): relist pokes are not needed. */
  get live(): boolean {
    return this.#session !== undefined;
  }

  streamUp(stream: string): void {
    this.#clearTimers();
    this.#pending.clear();
    this.#readAt.clear();
    this.#session = { id: stream, seq: 0 };
    this.#sendState();
  }

  event(notice: RuntimeEventNotice): void {
    if (this.#session === undefined) return;
    const { part } = notice;
    if (part.observedAt < (this.#readAt.get(part.uid) ?? -Infinity) - RUNTIME_CLOCK_SKEW_MS) return;
    const event = { containerId: notice.containerId, event: notice.type, at: part.observedAt };
    const op = this.#ops.get(part.uid);
    if (op !== undefined) {
      // The operation's view of the sandbox: held until the operation ends, or sent again after its status.
      const held = op.parts.get(part.sandboxId);
      op.parts.set(part.sandboxId, { part, events: [...(op.holding ? (held?.events ?? []) : []), event].slice(-MAX_EVENTS_PER_MESSAGE) });
      if (op.holding) return;
    }
    const key = `${part.uid}/${part.sandboxId}`;
    let p = this.#pending.get(key);
    if (p === undefined) this.#pending.set(key, (p = { part, events: [] }));
    p.part = part;
    p.events.push(event);
    if (p.events.length >= MAX_EVENTS_PER_MESSAGE) {
      this.#pending.delete(key);
      this.#sendPart(p);
    }
    this.#flushTimer ??= this.#o.clock.setTimeout(() => {
      this.#flushTimer = undefined;
      this.flush();
    }, this.#o.coalesceMs ?? 10);
  }

  streamDown(reason: string): void {
    if (this.#session === undefined) return;
    this.flush();
    this.#clearTimers();
    this.#sendState(reason);
    this.#session = undefined;
  }

  /** A SyncPod, KillPod or GC part of pod `uid` starts (in its trace context). */
  opStarted(uid: string): void {
    this.#ops.set(uid, { ctx: context.active(), startedAt: this.#o.clock.now(), parts: new Map(), holding: true });
  }

  /**
   * The operation on `uid` ended. Returns whether its runtime changes reach pleg without a relist
   * poke: true while the stream is live. With `observed` (what it read afterwards), sends the
   * pod's status, then the parts of events no older than that read (pending ones clearly older than
   * it — by more than the clocks' skew — are dropped: the read saw their changes).
   */
  opEnded(uid: string, observed?: OperationObservation): boolean {
    const op = this.#ops.get(uid);
    this.#ops.delete(uid);
    if (this.#session === undefined) return false;
    if (observed === undefined) {
      // Nothing read afterwards: what it held goes out as it is.
      if (op !== undefined && op.holding) this.#release(op);
      return true;
    }
    for (const key of [...this.#pending.keys()]) if (key.startsWith(`${uid}/`)) this.#pending.delete(key);
    this.#readAt.delete(uid); // re-inserted: the map stays ordered by time
    this.#readAt.set(uid, observed.readAt);
    const ctx = op?.ctx;
    this.#send(
      {
        type: 'kubelet.runtime.PodOperated.v1',
        ...this.#next(),
        uid,
        status: observed.status,
        observedAt: observed.readAt,
        // Later than the reply (GetNewerThan is strict): the status was read after the operation's
        // changes, and any change after the read reaches pleg as an event after this message.
        timestamp: Math.max(this.#o.clock.now(), observed.timestamp + 1),
      },
      ctx,
    );
    // Within the clocks' skew of the read, an event may be newer than it: sent (pleg settles it).
    for (const p of op?.parts.values() ?? []) if (p.part.observedAt >= observed.readAt - RUNTIME_CLOCK_SKEW_MS) this.#sendPart(p, ctx);
    return true;
  }

  /** Moves an operation's held parts to the pending ones (sent when the window closes). */
  #release(op: Operation): void {
    op.holding = false;
    for (const p of op.parts.values()) {
      const key = `${p.part.uid}/${p.part.sandboxId}`;
      const pending = this.#pending.get(key);
      this.#pending.set(key, { part: p.part, events: [...(pending?.events ?? []), ...p.events].slice(-MAX_EVENTS_PER_MESSAGE) });
    }
    this.#flushTimer ??= this.#o.clock.setTimeout(() => {
      this.#flushTimer = undefined;
      this.flush();
    }, this.#o.coalesceMs ?? 10);
  }

  /** Sends every pending part now. */
  flush(): void {
    if (this.#flushTimer !== undefined) this.#o.clock.clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) this.#sendPart(p, this.#ops.get(p.part.uid)?.ctx);
  }

  /** Stops the timers (shutdown); nothing is sent afterwards. */
  close(): void {
    this.#clearTimers();
    this.#pending.clear();
    this.#readAt.clear();
    this.#session = undefined;
  }

  #sendPart(p: Pending, ctx?: Context): void {
    const { part } = p;
    this.#send(
      {
        type: 'kubelet.runtime.ContainerEvents.v1',
        ...this.#next(),
        uid: part.uid,
        sandboxId: part.sandboxId,
        status: part.status,
        observedAt: part.observedAt,
        events: p.events,
      },
      ctx,
    );
  }

  /** The state message; `down` with a reason. While live, the next heartbeat is scheduled. */
  #sendState(down?: string): void {
    this.#send(
      {
        type: 'kubelet.runtime.EventStreamState.v1',
        ...this.#next(),
        state: down === undefined ? 'live' : 'down',
        at: this.#o.clock.now(),
        ...(down !== undefined ? { reason: down } : {}),
      },
      undefined,
    );
    if (down !== undefined) return;
    this.#heartbeatTimer = this.#o.clock.setTimeout(() => {
      this.#heartbeatTimer = undefined;
      if (this.#session === undefined) return;
      const now = this.#o.clock.now();
      const holdUntil = now - (this.#o.holdMs ?? 1000);
      for (const op of this.#ops.values()) if (op.holding && op.startedAt <= holdUntil && [...op.parts.values()].some(isProgress)) this.#release(op);
      for (const [uid, at] of this.#readAt) {
        if (at > now - READ_FLOOR_MS) break;
        this.#readAt.delete(uid);
      }
      this.flush();
      this.#sendState();
    }, this.#o.heartbeatMs ?? 1000);
  }

  #next(): { stream: string; seq: number } {
    const s = this.#session;
    if (s === undefined) throw new Error('no live container event stream');
    s.seq++;
    return { stream: s.id, seq: s.seq };
  }

  #send(message: RuntimeEventMessage, ctx: Context | undefined): void {
    this.#o.publisher.send(message, ctx ?? ROOT_CONTEXT);
  }

  #clearTimers(): void {
    if (this.#flushTimer !== undefined) this.#o.clock.clearTimeout(this.#flushTimer);
    if (this.#heartbeatTimer !== undefined) this.#o.clock.clearTimeout(this.#heartbeatTimer);
    this.#flushTimer = undefined;
    this.#heartbeatTimer = undefined;
  }
}
