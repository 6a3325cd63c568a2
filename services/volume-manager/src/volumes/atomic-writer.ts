/**
 * Writes a volume's projected files so that a reader never sees a half-updated set: the files go into
 * a new timestamped directory, the `..data` symlink is swapped to it in one rename, and each
 * user-visible path is a symlink through `..data`.
 *
 * Models pkg/volume/util/atomic_writer.go (AtomicWriter.Write).
 *
 * ```
 * <dir>/..2026_12_01_10_00_00.123456789/labels     the payload, written whole
 * <dir>/..data -> ..2026_12_01_10_00_00.123456789  swapped by rename(..data_tmp, ..data)
 * <dir>/labels -> ..data/labels                     created once per top-level path
 * ```
 */
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readFile, readdir, readlink, rename, rm, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';

/** One projected file. */
export interface ProjectedFile {
  readonly data: string | Uint8Array;
  /** Permission bits, e.g. 0o644. */
  readonly mode: number;
}

const DATA_DIR = '..data';
const DATA_DIR_TMP = '..data_tmp';

/**
 * Checks a payload path as the kubelet does: relative, no `..` element, not starting with `..`.
 * Throws with the kubelet's wording.
 *
 * Models atomic_writer.go validatePath.
 */
export function validatePayloadPath(p: string): void {
  if (p === '') throw new Error('invalid path: must not be empty');
  if (p.length > 4096) throw new Error(`invalid path: must be less than or equal to 4096 characters`);
  if (posix.isAbsolute(p)) throw new Error(`invalid path: must be relative path: ${p}`);
  if (p.split('/').includes('..')) throw new Error(`invalid path: must not contain '..': ${p}`);
  if (p.startsWith('..')) throw new Error(`invalid path: must not start with '..': ${p}`);
}

/** Go's `..2006_01_02_15_04_05.` prefix plus a random suffix, as os.MkdirTemp makes it. */
function timestampedDirName(now: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  const ts = `${now.getUTCFullYear()}_${pad(now.getUTCMonth() + 1)}_${pad(now.getUTCDate())}_${pad(now.getUTCHours())}_${pad(now.getUTCMinutes())}_${pad(now.getUTCSeconds())}`;
  return `..${ts}.${randomBytes(5).readUInt32BE(0)}`;
}

async function currentDataDir(dir: string): Promise<string | undefined> {
  try {
    return await readlink(join(dir, DATA_DIR));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** True when the current `..data` holds exactly `payload` (same paths, bytes and modes). */
async function payloadUnchanged(tsDir: string, payload: ReadonlyMap<string, ProjectedFile>): Promise<boolean> {
  const onDisk = await listFiles(tsDir, '');
  if (onDisk.length !== payload.size) return false;
  for (const rel of onDisk) {
    const want = payload.get(rel);
    if (want === undefined) return false;
    const full = join(tsDir, rel);
    const [bytes, st] = await Promise.all([readFile(full), stat(full)]);
    if ((st.mode & 0o7777) !== want.mode) return false;
    if (!bytes.equals(typeof want.data === 'string' ? Buffer.from(want.data) : Buffer.from(want.data))) return false;
  }
  return true;
}

async function listFiles(root: string, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(join(root, prefix), { withFileTypes: true })) {
    const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
    if (e.isDirectory()) out.push(...(await listFiles(root, rel)));
    else out.push(rel);
  }
  return out;
}

async function lexists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

/**
 * Projects `payload` (relative path → file) into `dir` atomically. Returns false when the current
 * content is already exactly the payload (nothing is written), true after a swap. `dir` must exist.
 * Not safe to call concurrently for the same `dir` (volume-manager holds the pod's lock).
 */
export async function writeAtomically(dir: string, payload: ReadonlyMap<string, ProjectedFile>, now: Date = new Date()): Promise<boolean> {
  for (const p of payload.keys()) validatePayloadPath(p);
  const oldTsName = await currentDataDir(dir);
  const oldTsDir = oldTsName === undefined ? undefined : join(dir, oldTsName);
  if (oldTsDir !== undefined && (await lexists(oldTsDir)) && (await payloadUnchanged(oldTsDir, payload))) return false;

  const tsName = timestampedDirName(now);
  const tsDir = join(dir, tsName);
  await mkdir(tsDir, { mode: 0o755 });
  await chmod(tsDir, 0o755);
  for (const [rel, file] of payload) {
    const full = join(tsDir, rel);
    await mkdir(dirname(full), { recursive: true, mode: 0o755 });
    await writeFile(full, file.data);
    await chmod(full, file.mode);
  }

  // Swap ..data in one rename, so readers see the old set or the new one, never a mix.
  const tmpLink = join(dir, DATA_DIR_TMP);
  await rm(tmpLink, { force: true });
  await symlink(tsName, tmpLink);
  await rename(tmpLink, join(dir, DATA_DIR));

  // User-visible paths: one symlink per top-level element of the payload.
  const wanted = new Set([...payload.keys()].map((p) => p.split('/')[0] as string));
  for (const top of wanted) {
    const link = join(dir, top);
    if (!(await lexists(link))) await symlink(posix.join(DATA_DIR, top), link);
  }
  // Paths of the old payload that are gone, and the old data directory.
  for (const e of await readdir(dir)) {
    if (e.startsWith('..') || wanted.has(e)) continue;
    const st = await lstat(join(dir, e));
    if (st.isSymbolicLink()) await unlink(join(dir, e));
  }
  if (oldTsDir !== undefined) await rm(oldTsDir, { recursive: true, force: true });
  return true;
}
