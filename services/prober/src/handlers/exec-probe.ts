/**
 * exec probe: runs the command in the container through CRI ExecSync with the probe's timeout.
 * Exit 0 is success, any other exit a failure; the output (stdout then stderr, at most 10 KiB) is
 * the probe's output. A command outliving the timeout is a failure `command "<cmd>" timed out`
 * (the kubelet's ExecProbeTimeout behaviour); any other ExecSync error is a probe error.
 *
 * Models pkg/probe/exec/exec.go (Probe), kuberuntime RunInContainer and cri-client
 * remote_runtime.go ExecSync (DeadlineExceeded → TimeoutError "command %q timed out").
 */
import { isCriError, type RuntimeService } from '@splitlet/cri';
import type { HandlerOutcome } from '../prober/probe-type.js';

/** maxReadLength of the exec prober. */
const MAX_OUTPUT_BYTES = 10 * 1024;

/** What the exec probe needs of the runtime. */
export type ExecRuntime = Pick<RuntimeService, 'ExecSync'>;

/** Runs one exec probe. Throws (a probe error) when ExecSync fails other than by the timeout. */
export async function execProbe(runtime: ExecRuntime, containerId: string, command: readonly string[], timeoutSeconds: number, signal?: AbortSignal): Promise<HandlerOutcome> {
  let r;
  try {
    r = await runtime.ExecSync({ containerId, cmd: [...command], timeout: String(timeoutSeconds) }, signal === undefined ? {} : { signal });
  } catch (e) {
    if (isCriError(e, 'DeadlineExceeded')) return { result: 'failure', output: `command ${JSON.stringify(command.join(' '))} timed out` };
    throw e;
  }
  const out = Buffer.concat([Buffer.from(r.stdout), Buffer.from(r.stderr)])
    .subarray(0, MAX_OUTPUT_BYTES)
    .toString('utf8');
  return { result: r.exitCode === 0 ? 'success' : 'failure', output: out };
}
