/**
 * Creating a pod's sandbox: its config (with the node's resolv.conf read afresh; DNS warnings
 * recorded as events) and the pod log directory, side by side, then RunPodSandbox.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_sandbox.go (createPodSandbox, generatePodSandboxConfig).
 */
import type { BoundPod } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import type { CriInput, PodSandboxConfig } from '@splitlet/cri';
import { formatPod } from '@splitlet/kube';
import type { CriRuntime, EventRecorder, NodeFiles } from '../ports.js';
import { podRef } from './container-ref.js';
import { parseResolvConf } from './dns.js';
import { buildPodLogsDirectory, generatePodSandboxConfig, type SandboxSettings } from './sandbox-config.js';

/** Dependencies of a {@link PodSandboxCreator}. */
export interface PodSandboxCreatorDeps {
  readonly runtime: CriRuntime;
  readonly recorder: EventRecorder;
  readonly nodeFiles: NodeFiles;
  readonly sandbox: SandboxSettings;
}

/** The outcome of {@link PodSandboxCreator.create}. */
export type CreateSandboxResult = { ok: true; sandboxId: string } | { ok: false; message: string; errorText: string };

/** Creates pod sandboxes. Stateless. */
export class PodSandboxCreator {
  readonly #d: PodSandboxCreatorDeps;

  constructor(deps: PodSandboxCreatorDeps) {
    this.#d = deps;
  }

  /**
   * The sandbox config, with the node's resolv.conf read afresh (as GetPodDNS does).
   *
   * Models kubeGenericRuntimeManager.generatePodSandboxConfig.
   */
  async generateConfig(pod: BoundPod, attempt: number): Promise<ReturnType<typeof generatePodSandboxConfig>> {
    const text = await this.#d.nodeFiles.readResolvConf();
    return generatePodSandboxConfig(pod, attempt, this.#d.sandbox, parseResolvConf(text));
  }

  /**
   * Creates the sandbox: its config (DNS warnings recorded as events), the pod log directory, then
   * RunPodSandbox. A failure says which of the three failed.
   *
   * Models kubeGenericRuntimeManager.createPodSandbox.
   */
  async create(pod: BoundPod, attempt: number): Promise<CreateSandboxResult> {
    const d = this.#d;
    // The two file operations run side by side (each a trip to the thread pool); their failures are
    // reported in the kubelet's order.
    const logDir = d.nodeFiles.ensureDir(buildPodLogsDirectory(d.sandbox.podLogDir, pod)).then(
      () => undefined,
      (e: unknown) => ({ e }),
    );
    let config: CriInput<PodSandboxConfig>;
    try {
      const generated = await this.generateConfig(pod, attempt);
      config = generated.config;
      for (const w of generated.warnings) d.recorder.record({ pod: podRef(pod), eventType: 'Warning', reason: w.reason, message: w.message });
    } catch (e) {
      await logDir;
      return failed(`Failed to generate sandbox config for pod ${JSON.stringify(formatPod(pod))}`, e);
    }
    const logDirFailure = await logDir;
    if (logDirFailure !== undefined) return failed(`Failed to create log directory for pod ${JSON.stringify(formatPod(pod))}`, logDirFailure.e);
    try {
      const resp = await d.runtime.RunPodSandbox({ config });
      return { ok: true, sandboxId: resp.podSandboxId };
    } catch (e) {
      return failed(`Failed to create sandbox for pod ${JSON.stringify(formatPod(pod))}`, e);
    }
  }
}

function failed(what: string, e: unknown): CreateSandboxResult {
  return { ok: false, message: `${what}: ${errorMessage(e)}`, errorText: errorMessage(e) };
}
