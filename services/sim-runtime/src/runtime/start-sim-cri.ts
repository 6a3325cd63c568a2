/**
 * startSimCri(): the simulator behind a real gRPC server on a fresh unix socket, for this workspace's
 * tests and for test/integration (`import { startSimCri } from '@splitlet/sim-runtime/simulator'`).
 */
import { serveCriOwned, type OwnedCriServer } from '@splitlet/cri';
import { createSimRuntime, type SimRuntime, type SimRuntimeOptions } from './sim-runtime.js';

/** A running simulator and its gRPC server. */
export interface SimCri extends OwnedCriServer {
  /** The simulator itself, for knobs (`setLatency`, `injectFailure`) and direct calls. */
  readonly sim: SimRuntime;
}

/** Starts `createSimRuntime(options)` behind `serveCri` on `socketPath`, by default a new temp directory's `cri.sock`. */
export async function startSimCri(options: SimRuntimeOptions & { socketPath?: string } = {}): Promise<SimCri> {
  const { socketPath, ...simOptions } = options;
  const sim = createSimRuntime(simOptions);
  return { sim, ...(await serveCriOwned(sim, () => sim.close(), socketPath)) };
}
