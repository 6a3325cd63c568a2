/**
 * `splitlet logs POD [-c CONTAINER] [--previous] [-f] [--tail N] [--timestamps]`: a container's output from the
 * CRI log files — on this machine, or served by the node's cri-adapter over the bus — (`<pod log dir>/<ns>_<name>_<uid>/<container>/<restartCount>.log`), printed as
 * kubectl prints it. Each CRI line is `<RFC3339Nano time> <stdout|stderr> <P|F> <text>`; `P`
 * (partial) pieces are joined with the following ones up to the `F` (full) piece.
 */
import { parseCriLogLine } from '@splitlet/cri';
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ContainerLogsReply, ContainerLogsRequest, hasErrorCode, Subjects } from '@splitlet/api';
import type { ContainerStatus } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import { CliError } from '../state-dir.js';
import { findPod, listPods } from '../node-view.js';
import type { CliTarget } from '../target.js';
import { pollUntilInterrupted } from '../interruptible.js';

/** One decoded CRI log record. */
export interface CriLogLine {
  time: string;
  stream: 'stdout' | 'stderr';
  text: string;
}

/** Decodes CRI log text into whole lines (partial records joined). Malformed lines are kept as text. */
export function parseCriLog(text: string): CriLogLine[] {
  const out: CriLogLine[] = [];
  let partial: CriLogLine | undefined;
  for (const raw of text.split('\n')) {
    if (raw === '') continue;
    const r = parseCriLogLine(raw);
    if (r === undefined) {
      out.push({ time: '', stream: 'stdout', text: raw });
      continue;
    }
    const piece = r.content.toString('utf8');
    const line = partial ? { ...partial, text: partial.text + piece } : { time: r.time, stream: r.stream, text: piece };
    if (r.partial) partial = line;
    else {
      out.push(line);
      partial = undefined;
    }
  }
  if (partial) out.push(partial);
  return out;
}

/**
 * Which run's log file (`<n>.log`, n the container's restart count) to read: the container the
 * kubelet would pick (validateContainerLogStatus). Without `previous`, the current container. With
 * it, the last terminated one: the run before the current one, or — while the next run waits to
 * start, e.g. in CrashLoopBackOff — the newest container itself (its status moved to `lastState`;
 * container GC keeps only that one). -1 when there is no such container.
 */
export function logAttempt(st: ContainerStatus | undefined, previous: boolean): number {
  const restarts = st?.restartCount ?? 0;
  if (!previous) return restarts;
  if (st?.lastState?.terminated == null) return -1;
  const current = st.state?.running != null || st.state?.terminated != null;
  return current ? restarts - 1 : restarts;
}

function format(l: CriLogLine, timestamps: boolean): string {
  return timestamps && l.time ? `${l.time} ${l.text}\n` : `${l.text}\n`;
}

/** Bytes of one log file from an offset: the local file, or the node's cri-adapter over the bus. */
interface LogChunkSource {
  /** `tailLines` only on the first read: the source may start where the last N lines start. */
  read(offset: number | undefined, tailLines: number | undefined): Promise<{ data: Buffer; nextOffset: number; size: number }>;
  /** How often to look for more with -f. */
  readonly pollMs: number;
}

function localSource(file: string): LogChunkSource {
  return {
    pollMs: 250,
    async read(offset) {
      const from = offset ?? 0;
      const size = statSync(file).size;
      if (size <= from) return { data: Buffer.alloc(0), nextOffset: from, size };
      const fd = openSync(file, 'r');
      try {
        const buf = Buffer.alloc(size - from);
        const n = readSync(fd, buf, 0, buf.length, from);
        return { data: buf.subarray(0, n), nextOffset: from + n, size };
      } finally {
        closeSync(fd);
      }
    },
  };
}

function busSource(bus: Bus, node: string, req: Omit<ContainerLogsRequest, 'type' | 'offset' | 'tailLines'>): LogChunkSource {
  return {
    pollMs: 500,
    async read(offset, tailLines) {
      const r = await bus.request(
        ContainerLogsRequest,
        ContainerLogsReply,
        Subjects.rpc.logs(node),
        { type: 'kubelet.logs.Read.v1', ...req, ...(offset !== undefined ? { offset } : {}), ...(tailLines !== undefined ? { tailLines } : {}) },
        { timeoutMs: 15_000 },
      );
      return { data: Buffer.from(r.data, 'base64'), nextOffset: r.nextOffset, size: r.size };
    },
  };
}

/** Options of {@link logs}. */
export interface LogsOptions {
  namespace: string;
  container: string | undefined;
  previous: boolean;
  follow: boolean;
  timestamps: boolean;
  /** Only the last N lines (kubectl --tail; -1 = all). */
  tail: number | undefined;
}

/**
 * `splitlet logs`: reads the run's CRI log file from this machine when the instance runs here (the
 * fast path), else asks the node's cri-adapter for it over the bus, chunk by chunk; `-f` keeps
 * polling from the last offset until Ctrl-C.
 */
export async function logs(t: CliTarget, name: string, opts: LogsOptions, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<void> {
  const pod = findPod(await listPods(t.bus, t.nodeName), name, opts.namespace, t.nodeName)?.pod;
  if (!pod) throw new CliError(`Error from server (NotFound): pods "${name}" not found`);
  const podName = pod.metadata.name!;
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => c.name);
  let container = opts.container;
  if (container === undefined) {
    container = pod.metadata.annotations?.['kubectl.kubernetes.io/default-container'] ?? pod.spec.containers[0]!.name;
    if (all.length > 1) err.write(`Defaulted container "${container}" out of: ${all.join(', ')}\n`);
  } else if (!all.includes(container)) {
    throw new CliError(`error: container ${container} is not valid for pod ${podName}`);
  }
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  const st = statuses.find((c) => c.name === container);
  const attempt = logAttempt(st, opts.previous);
  const notFound = (): CliError => {
    if (opts.previous) return new CliError(`Error from server (BadRequest): previous terminated container "${container}" in pod "${podName}" not found`);
    const waiting = st?.state?.waiting?.reason ?? 'ContainerCreating';
    return new CliError(`Error from server (BadRequest): container "${container}" in pod "${podName}" is waiting to start: ${waiting}`);
  };
  if (attempt < 0) throw notFound();
  const namespace = pod.metadata.namespace ?? 'default';
  const uid = pod.metadata.uid!;
  const localFile = t.local ? join(t.local.stateDir.podLogs, `${namespace}_${podName}_${uid}`, container, `${attempt}.log`) : undefined;
  const source = localFile !== undefined && existsSync(localFile) ? localSource(localFile) : busSource(t.bus, t.nodeName, { namespace, podName, podUid: uid, container, attempt });
  const tail = opts.tail !== undefined && opts.tail >= 0 ? opts.tail : undefined;

  let offset: number | undefined;
  let carry = Buffer.alloc(0);
  /** Reads everything there is now; returns the complete lines (a trailing piece waits in `carry`). */
  const drain = async (first: boolean): Promise<CriLogLine[]> => {
    const lines: CriLogLine[] = [];
    for (;;) {
      let chunk;
      try {
        chunk = await source.read(offset, first && offset === undefined ? tail : undefined);
      } catch (e) {
        if (hasErrorCode(e, 'Remote') && (e as { remoteCode?: string }).remoteCode === 'NotFound') throw notFound();
        if (hasErrorCode(e, 'NoResponders')) throw new CliError(`cannot read logs of ${podName}: no cri-adapter of node ${t.nodeName} answers on the bus (is it running?)`);
        throw e;
      }
      offset = chunk.nextOffset;
      const text = Buffer.concat([carry, chunk.data]);
      const cut = text.lastIndexOf(0x0a);
      carry = cut >= 0 ? text.subarray(cut + 1) : text;
      if (cut >= 0) lines.push(...parseCriLog(text.subarray(0, cut + 1).toString('utf8')));
      if (chunk.data.length === 0 || chunk.nextOffset >= chunk.size) return lines;
    }
  };
  const firstLines = await drain(true);
  for (const l of tail !== undefined ? firstLines.slice(Math.max(0, firstLines.length - tail)) : firstLines) out.write(format(l, opts.timestamps));
  if (!opts.follow) {
    if (carry.length > 0) for (const l of parseCriLog(carry.toString('utf8'))) out.write(format(l, opts.timestamps));
    return;
  }
  await pollUntilInterrupted(source.pollMs, async () => {
    for (const l of await drain(false)) out.write(format(l, opts.timestamps));
  });
}
