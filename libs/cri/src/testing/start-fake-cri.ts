/**
 * startFakeCri(): the fake runtime behind a real gRPC server on a fresh unix socket, so a test drives
 * it through `GrpcRuntimeService` as a process would.
 */
import { serveCriOwned, type OwnedCriServer } from '../serve-cri.js';
import { createFakeRuntime, type FakeRuntimeOptions, type FakeRuntimeService } from './fake-runtime-service.js';

/** A running fake and its gRPC server. */
export interface FakeCri extends OwnedCriServer {
  readonly fake: FakeRuntimeService;
}

/** Starts `createFakeRuntime(options)` behind `serveCri` on `socketPath`, by default a new temp directory's `cri.sock`. */
export async function startFakeCri(options: FakeRuntimeOptions & { socketPath?: string } = {}): Promise<FakeCri> {
  const { socketPath, ...fakeOptions } = options;
  const fake = createFakeRuntime(fakeOptions);
  return { fake, ...(await serveCriOwned(fake, () => fake.close(), socketPath)) };
}
