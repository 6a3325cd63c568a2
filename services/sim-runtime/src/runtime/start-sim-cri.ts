/**
 * startSimCri(): the simulator behind a real gRPC server on a fresh unix socket, for tests in any
 * workspace that may depend on sim-runtime (`import { startSimCri } from '@splitlet/sim-runtime/simulator'`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { serveCri, type CriServer } from '@splitlet/cri';
import { createSimRuntime, type SimRuntime, type SimRuntimeOptions } from './sim-runtime.js';

/** A running simulator and its gRPC server. */
export interface SimCri {
  /** The simulator itself, for knobs (`setLatency`, `injectFailure`) and direct calls. */
  readonly sim: SimRuntime;
  readonly server: CriServer;
  /** `unix:///…/cri.sock`: pass it to `GrpcRuntimeService.connect({ endpoint })`. */
  readonly endpoint: string;
  /** Closes the server and the simulator, and removes the temp directory. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts `createSimRuntime(options)` behind `serveCri` on `<socketPath>`, by default a new temp
 * directory's `cri.sock` (removed on close).
 */
export async function startSimCri(options: SimRuntimeOptions & { socketPath?: string } = {}): Promise<SimCri> {
  const { socketPath: given, ...simOptions } = options;
  const dir = given === undefined ? mkdtempSync(path.join(tmpdir(), 'splitlet-sim-cri-')) : undefined;
  const socketPath = given ?? path.join(dir as string, 'cri.sock');
  const sim = createSimRuntime(simOptions);
  let server: CriServer;
  try {
    server = await serveCri(sim, socketPath);
  } catch (e) {
    await sim.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  let closing: Promise<void> | undefined;
  return {
    sim,
    server,
    endpoint: server.endpoint,
    close() {
      closing ??= (async () => {
        await server.close(100);
        await sim.close();
        if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}
