/**
 * `splitlet logs POD [-c CONTAINER] [--previous] [-f] [--timestamps]`: a container's output from the
 * CRI log files (`<pod log dir>/<ns>_<name>_<uid>/<container>/<restartCount>.log`), printed as
 * kubectl prints it. Each CRI line is `<RFC3339Nano time> <stdout|stderr> <P|F> <text>`; `P`
 * (partial) pieces are joined with the following ones up to the `F` (full) piece.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ContainerStatus } from '@splitlet/api';
import { parseCriLogLine } from '@splitlet/cri';
import type { InstanceInfo, StateDir } from '../state-dir.js';
import { CliError } from '../state-dir.js';
import { connectCli, findPod, listPods } from '../node-view.js';

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

export async function logs(
  s: StateDir,
  inst: InstanceInfo,
  name: string,
  opts: { namespace: string; container: string | undefined; previous: boolean; follow: boolean; timestamps: boolean },
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<void> {
  const bus = await connectCli(inst);
  let pod;
  try {
    pod = findPod(await listPods(bus, inst.nodeName), name, opts.namespace, inst.nodeName)?.pod;
  } finally {
    await bus.close();
  }
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
  const dir = join(s.podLogs, `${pod.metadata.namespace}_${podName}_${pod.metadata.uid}`, container);
  const file = join(dir, `${attempt}.log`);
  if (attempt < 0 || !existsSync(file)) {
    if (opts.previous) throw new CliError(`Error from server (BadRequest): previous terminated container "${container}" in pod "${podName}" not found`);
    const waiting = st?.state?.waiting?.reason ?? 'ContainerCreating';
    throw new CliError(`Error from server (BadRequest): container "${container}" in pod "${podName}" is waiting to start: ${waiting}`);
  }
  // Read from the start, then (with -f) keep reading as the file grows until Ctrl-C.
  let offset = 0;
  let carry = '';
  const drain = (): void => {
    const size = statSync(file).size;
    if (size <= offset) return;
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(size - offset);
      readSync(fd, buf, 0, buf.length, offset);
      offset = size;
      const text = carry + buf.toString('utf8');
      const cut = text.lastIndexOf('\n');
      carry = cut >= 0 ? text.slice(cut + 1) : text;
      for (const l of parseCriLog(cut >= 0 ? text.slice(0, cut + 1) : '')) out.write(format(l, opts.timestamps));
    } finally {
      closeSync(fd);
    }
  };
  drain();
  if (!opts.follow) {
    if (carry) for (const l of parseCriLog(carry)) out.write(format(l, opts.timestamps));
    return;
  }
  await new Promise<void>((resolveFollow) => {
    const timer = setInterval(drain, 250);
    const stop = (): void => {
      clearInterval(timer);
      resolveFollow();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
