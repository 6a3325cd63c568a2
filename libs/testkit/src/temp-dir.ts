import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh directory under the OS temp dir. */
export interface TempDir {
  /** Absolute path. */
  readonly path: string;
  /** Removes the directory and everything in it. Idempotent. */
  cleanup(): Promise<void>;
}

/** Creates `<tmpdir>/<prefix>XXXXXX`. Call `cleanup()` in `after`/`finally`. */
export async function makeTempDir(prefix: string): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}
