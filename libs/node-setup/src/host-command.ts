/**
 * Runs the host tools the local runtime needs (ip, mount, umount, runc) with a PATH that has the
 * sbin folders, whatever PATH the CLI was started with (Debian puts ip and runc in /usr/sbin).
 */
import { spawnSync } from 'node:child_process';
import type { SpawnSyncReturns } from 'node:child_process';

/** The PATH containerd, its shims, runc and the host tools run with. */
export const RUNTIME_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Runs `cmd args…` synchronously with {@link RUNTIME_PATH}; output as text. Never throws (see `error`/`status`). */
export function hostCommand(cmd: string, args: readonly string[]): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { encoding: 'utf8', env: { PATH: RUNTIME_PATH } });
}
