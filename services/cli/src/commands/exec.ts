/**
 * `splitlet exec POD [-c CONTAINER] -- COMMAND [ARG…]`: runs a command in a running container
 * through cri-adapter's `exec` endpoint (CRI ExecSync on the node), prints its stdout and stderr,
 * and returns its exit code — kubectl exec without `-i`/`-t` (ExecSync has no stdin and no tty).
 */
import { RuntimeExecReply, RuntimeExecRequest, Subjects } from '@splitlet/api';
import { isBusError } from '@splitlet/bus';
import { CliError } from '../state-dir.js';
import { findPod, listPods } from '../node-view.js';
import type { CliTarget } from '../target.js';

/** Options of {@link exec}. */
export interface ExecOptions {
  readonly namespace: string;
  readonly container: string | undefined;
  /** Seconds the command may run; 0: no limit. */
  readonly timeoutSeconds: number;
}

/** Runs the command; resolves with its exit code. */
export async function exec(t: CliTarget, name: string, cmd: readonly string[], o: ExecOptions, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<number> {
  if (cmd.length === 0) throw new CliError('error: you must specify at least one command for the container');
  const bus = t.bus;
  const pod = findPod(await listPods(bus, t.nodeName), name, o.namespace, t.nodeName)?.pod;
  if (pod === undefined) throw new CliError(`Error from server (NotFound): pods "${name}" not found`);
  const podName = pod.metadata.name ?? name;
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => c.name);
  let container = o.container;
  if (container === undefined) {
    container = pod.metadata.annotations?.['kubectl.kubernetes.io/default-container'] ?? pod.spec.containers[0]!.name;
    if (all.length > 1) err.write(`Defaulted container "${container}" out of: ${all.join(', ')}\n`);
  } else if (!all.includes(container)) {
    throw new CliError(`error: unable to upgrade connection: container ${container} not found in pod ${podName}`);
  }
  if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') {
    throw new CliError(`error: cannot exec into a container in a completed pod; current phase is ${pod.status.phase}`);
  }
  const st = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find((c) => c.name === container);
  const id = st?.containerID?.split('://')[1];
  if (st?.state?.running === undefined || id === undefined) {
    throw new CliError(`error: unable to upgrade connection: container not found ("${container}")`);
  }
  let reply: RuntimeExecReply;
  try {
    reply = await bus.request(
      RuntimeExecRequest,
      RuntimeExecReply,
      Subjects.rpc.runtime(t.nodeName, 'exec'),
      { type: 'kubelet.runtime.ExecRequest.v1', containerId: id, cmd: [...cmd], timeoutSeconds: o.timeoutSeconds },
      { timeoutMs: o.timeoutSeconds > 0 ? o.timeoutSeconds * 1000 + 30_000 : 24 * 3600 * 1000 },
    );
  } catch (e) {
    if (isBusError(e)) throw new CliError(`error: ${e.message}`);
    throw e;
  }
  out.write(Buffer.from(reply.stdout, 'base64'));
  err.write(Buffer.from(reply.stderr, 'base64'));
  if (reply.truncated === true) err.write('(output truncated)\n');
  if (reply.exitCode !== 0) err.write(`command terminated with exit code ${reply.exitCode}\n`);
  return reply.exitCode;
}
