/**
 * fsGroup ownership of a volume: every file and directory is given the pod's fsGroup as group, group
 * read/write, and directories the setgid bit (so new files inherit the group) and group execute.
 * Symlinks are re-grouped but never chmod'ed (that would change their target).
 *
 * Models pkg/volume/volume_linux.go (SetVolumeOwnership, changeFilePermission,
 * skipPermissionChange / requirePermissionChange for fsGroupChangePolicy OnRootMismatch).
 */
import { chmod, lchown, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

const RW_MASK = 0o660;
const RO_MASK = 0o440;
const EXEC_MASK = 0o110;
const SETGID = 0o2000;

/** `spec.securityContext.fsGroupChangePolicy`. */
export type FsGroupChangePolicy = 'Always' | 'OnRootMismatch';

function wantedBits(isDir: boolean, readonly: boolean): number {
  const mask = readonly ? RO_MASK : RW_MASK;
  return isDir ? mask | SETGID | EXEC_MASK : mask;
}

/** OnRootMismatch: the root already has the group and the bits, so the walk is skipped. */
async function rootMatches(dir: string, fsGroup: number, readonly: boolean): Promise<boolean> {
  const st = await lstat(dir);
  if (st.gid !== fsGroup) return false;
  const bits = wantedBits(st.isDirectory(), readonly);
  return (st.mode & bits) === bits;
}

async function walk(path: string, fsGroup: number, readonly: boolean): Promise<void> {
  const st = await lstat(path);
  await lchown(path, -1, fsGroup);
  if (st.isSymbolicLink()) return;
  await chmod(path, (st.mode & 0o7777) | wantedBits(st.isDirectory(), readonly));
  if (!st.isDirectory()) return;
  for (const e of await readdir(path)) await walk(join(path, e), fsGroup, readonly);
}

/**
 * Applies `fsGroup` to `dir` and everything below it. With `OnRootMismatch`, nothing is done when
 * the root directory already has the group and permissions. Returns whether the walk ran.
 */
export async function setVolumeOwnership(dir: string, fsGroup: number, policy: FsGroupChangePolicy = 'Always', readonly = false): Promise<boolean> {
  if (policy === 'OnRootMismatch' && (await rootMatches(dir, fsGroup, readonly))) return false;
  await walk(dir, fsGroup, readonly);
  return true;
}

/** The pod's fsGroup settings, read leniently from `spec.securityContext`. */
export function podFsGroup(securityContext: unknown): { fsGroup: number; policy: FsGroupChangePolicy } | undefined {
  if (typeof securityContext !== 'object' || securityContext === null) return undefined;
  const sc = securityContext as { fsGroup?: unknown; fsGroupChangePolicy?: unknown };
  if (typeof sc.fsGroup !== 'number' || !Number.isInteger(sc.fsGroup) || sc.fsGroup < 0) return undefined;
  return { fsGroup: sc.fsGroup, policy: sc.fsGroupChangePolicy === 'OnRootMismatch' ? 'OnRootMismatch' : 'Always' };
}
