/**
 * kubectl's pod printer: the READY / STATUS / RESTARTS / AGE computation of `kubectl get pods`, shared
 * by the CLI's table and the API server's server-side Table.
 *
 * Models kubernetes pkg/printers/internalversion/printers.go printPod and apimachinery's
 * duration.HumanDuration.
 */
import type { Pod } from '@splitlet/api';

/** apimachinery duration.HumanDuration. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.floor(hours / 24) % 365;
    return dy === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${dy}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

/** The time a pod counts its age from: creationTimestamp, else the config.seen annotation, else startTime. */
export function podCreatedAt(pod: Pod): number | undefined {
  const t = pod.metadata.creationTimestamp ?? pod.metadata.annotations?.['kubernetes.io/config.seen'] ?? pod.status?.startTime;
  if (!t) return undefined;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? undefined : ms;
}

/** One row of `get pods`. */
export interface PodRow {
  name: string;
  ready: string;
  status: string;
  restarts: string;
  age: string;
  ip: string;
  node: string;
  nominatedNode: string;
  readinessGates: string;
}

/** printPod: the kubectl STATUS/READY/RESTARTS computation. `terminating` marks a pod being deleted. */
export function podRow(pod: Pod, now: number, terminating = false): PodRow {
  const status = pod.status ?? {};
  const initSpecs = new Map((pod.spec.initContainers ?? []).map((c) => [c.name, c]));
  let restarts = 0;
  let lastRestart = 0;
  let readyContainers = 0;
  let totalContainers = pod.spec.containers.length;
  let reason: string = status.phase ?? 'Pending';
  if (status.reason) reason = status.reason;
  let sidecarRestarts = 0;
  let sidecarLastRestart = 0;
  for (const c of pod.spec.initContainers ?? []) if (c.restartPolicy === 'Always') totalContainers++;
  let initializing = false;
  const initStatuses = status.initContainerStatuses ?? [];
  for (let i = 0; i < initStatuses.length; i++) {
    const c = initStatuses[i]!;
    restarts += c.restartCount;
    const lastFinished = c.lastState?.terminated?.finishedAt ? Date.parse(c.lastState.terminated.finishedAt) : 0;
    if (lastFinished > lastRestart) lastRestart = lastFinished;
    const sidecar = initSpecs.get(c.name)?.restartPolicy === 'Always';
    if (sidecar) {
      sidecarRestarts += c.restartCount;
      if (lastFinished > sidecarLastRestart) sidecarLastRestart = lastFinished;
    }
    const term = c.state?.terminated;
    const waiting = c.state?.waiting;
    if (term && term.exitCode === 0) continue;
    if (sidecar && c.started) {
      if (c.ready) readyContainers++;
      continue;
    }
    if (term) {
      reason = term.reason ? `Init:${term.reason}` : term.signal ? `Init:Signal:${term.signal}` : `Init:ExitCode:${term.exitCode}`;
      initializing = true;
    } else if (waiting?.reason && waiting.reason !== 'PodInitializing') {
      reason = `Init:${waiting.reason}`;
      initializing = true;
    } else {
      reason = `Init:${i}/${(pod.spec.initContainers ?? []).length}`;
      initializing = true;
    }
    break;
  }
  const initializedTrue = (status.conditions ?? []).some((c) => c.type === 'Initialized' && c.status === 'True');
  if (!initializing || initializedTrue) {
    restarts = sidecarRestarts;
    lastRestart = sidecarLastRestart;
    let hasRunning = false;
    const cs = status.containerStatuses ?? [];
    for (let i = cs.length - 1; i >= 0; i--) {
      const c = cs[i]!;
      restarts += c.restartCount;
      const lastFinished = c.lastState?.terminated?.finishedAt ? Date.parse(c.lastState.terminated.finishedAt) : 0;
      if (lastFinished > lastRestart) lastRestart = lastFinished;
      const waiting = c.state?.waiting;
      const term = c.state?.terminated;
      if (waiting?.reason) reason = waiting.reason;
      else if (term?.reason) reason = term.reason;
      else if (term) reason = term.signal ? `Signal:${term.signal}` : `ExitCode:${term.exitCode}`;
      else if (c.ready && c.state?.running) {
        hasRunning = true;
        readyContainers++;
      }
    }
    if (reason === 'Completed' && hasRunning) {
      reason = (status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True') ? 'Running' : 'NotReady';
    }
  }
  const terminal = status.phase === 'Succeeded' || status.phase === 'Failed';
  if ((pod.metadata.deletionTimestamp || terminating) && !terminal) reason = 'Terminating';
  let restartsStr = String(restarts);
  if (restarts !== 0 && lastRestart > 0) restartsStr = `${restarts} (${humanDuration(now - lastRestart)} ago)`;
  const created = podCreatedAt(pod);
  const gates = pod.spec.readinessGates ?? [];
  let gatesStr = '<none>';
  if (gates.length > 0) {
    const trueCount = gates.filter((g) => (status.conditions ?? []).some((c) => c.type === g.conditionType && c.status === 'True')).length;
    gatesStr = `${trueCount}/${gates.length}`;
  }
  return {
    name: pod.metadata.name ?? '',
    ready: `${readyContainers}/${totalContainers}`,
    status: reason,
    restarts: restartsStr,
    age: created === undefined ? '<unknown>' : humanDuration(now - created),
    ip: status.podIP ?? '<none>',
    node: pod.spec.nodeName ?? '<none>',
    nominatedNode: '<none>',
    readinessGates: gatesStr,
  };
}
