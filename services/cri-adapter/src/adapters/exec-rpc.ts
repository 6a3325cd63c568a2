/**
 * Serves `sl.<node>.rpc.runtime.exec` (queue group `cri-adapter`): CRI ExecSync in a container, for
 * `splitlet exec` (the kubelet's exec endpoint, without streaming: no stdin, no tty). The output is
 * returned base64-encoded, each stream capped at {@link MAX_EXEC_OUTPUT_BYTES} (`truncated` then set)
 * so the reply fits a NATS message. A failed ExecSync goes back as a WireError with its CRI code.
 */
import { RuntimeExecReply, RuntimeExecRequest, Subjects } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { RuntimeService } from '@splitlet/cri';
import { CRI_ADAPTER_QUEUE } from './runtime-rpc.js';

/** The most of each output stream an exec reply carries. */
export const MAX_EXEC_OUTPUT_BYTES = 256 * 1024;

/** Binds the endpoint until `signal` aborts. */
export function serveExecRpc(bus: Pick<Bus, 'serve'>, node: string, runtime: Pick<RuntimeService, 'ExecSync'>, signal: AbortSignal): void {
  bus.serve(
    Subjects.rpc.runtime(node, 'exec'),
    RuntimeExecRequest,
    RuntimeExecReply,
    async (req) => {
      const r = await runtime.ExecSync({ containerId: req.containerId, cmd: req.cmd, timeout: String(req.timeoutSeconds) });
      const stdout = Buffer.from(r.stdout);
      const stderr = Buffer.from(r.stderr);
      const truncated = stdout.length > MAX_EXEC_OUTPUT_BYTES || stderr.length > MAX_EXEC_OUTPUT_BYTES;
      return {
        type: 'kubelet.runtime.ExecReply.v1' as const,
        stdout: stdout.subarray(0, MAX_EXEC_OUTPUT_BYTES).toString('base64'),
        stderr: stderr.subarray(0, MAX_EXEC_OUTPUT_BYTES).toString('base64'),
        exitCode: r.exitCode,
        ...(truncated ? { truncated } : {}),
      };
    },
    { queue: CRI_ADAPTER_QUEUE, signal },
  );
}
