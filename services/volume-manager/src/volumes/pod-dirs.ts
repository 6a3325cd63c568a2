/**
 * The kubelet's on-disk layout for pods under the root directory, and the safe ways to create and
 * remove it.
 *
 * Models pkg/kubelet/kubelet_getters.go (getPodDir, getPodVolumesDir, getPodPluginsDir,
 * getPodVolumeDir), kubelet_pods.go (makePodDataDirs) and k8s.io/mount-utils
 * RemoveAllOneFilesystem.
 *
 * ```
 * <root>/pods/<uid>/
 *   volumes/kubernetes.io~empty-dir/<name>   emptyDir (0777; a tmpfs mount for medium: Memory)
 *   plugins/
 *   containers/
 * ```
 */
import { lstat, mkdir, readdir, rmdir, unlink, chmod } from 'node:fs/promises';
import { join } from 'node:path';

/** Plugin names, as the kubelet spells them (the `/` becomes `~` in directory names). */
export const PluginNames = {
  emptyDir: 'kubernetes.io/empty-dir',
  hostPath: 'kubernetes.io/host-path',
  downwardAPI: 'kubernetes.io/downward-api',
  configMap: 'kubernetes.io/configmap',
  secret: 'kubernetes.io/secret',
  projected: 'kubernetes.io/projected',
} as const;

/** Mode of the pod directories (makePodDataDirs). */
export const POD_DIR_MODE = 0o750;
/** Mode of an emptyDir volume directory (emptyDir setupDir: world-writable, as the kubelet does). */
export const EMPTY_DIR_MODE = 0o777;

const SAFE_TOKEN = /^[A-Za-z0-9._-]+$/;

/**
 * Throws unless `token` can be used as one path element (a pod UID or a volume name): no `/`,
 * not `.` or `..`, not empty. Manifests are validated upstream; this is the last line of defence
 * against a path that would escape the root.
 */
export function assertPathToken(kind: 'pod UID' | 'volume name', token: string): void {
  if (!SAFE_TOKEN.test(token) || token === '.' || token === '..') {
    throw new Error(`invalid ${kind} ${JSON.stringify(token)}: not usable as a directory name`);
  }
}

/** Path builders for one kubelet root directory. */
export interface PodPaths {
  readonly root: string;
  podsDir(): string;
  podDir(uid: string): string;
  podVolumesDir(uid: string): string;
  podPluginsDir(uid: string): string;
  podContainersDir(uid: string): string;
  /** `pods/<uid>/volumes/<escaped plugin>`, e.g. `…/volumes/kubernetes.io~empty-dir`. */
  podPluginVolumesDir(uid: string, pluginName: string): string;
  /** `pods/<uid>/volumes/<escaped plugin>/<name>`, e.g. `…/kubernetes.io~empty-dir/cache`. */
  podVolumeDir(uid: string, pluginName: string, volumeName: string): string;
}

/** The `/` of a plugin name becomes `~` in a directory name. Models utilstrings.EscapeQualifiedName. */
export function escapePluginName(pluginName: string): string {
  return pluginName.replaceAll('/', '~');
}

/** Path builders under `root` (an absolute path). */
export function podPaths(root: string): PodPaths {
  const podsDir = (): string => join(root, 'pods');
  const podDir = (uid: string): string => {
    assertPathToken('pod UID', uid);
    return join(podsDir(), uid);
  };
  return {
    root,
    podsDir,
    podDir,
    podVolumesDir: (uid) => join(podDir(uid), 'volumes'),
    podPluginsDir: (uid) => join(podDir(uid), 'plugins'),
    podContainersDir: (uid) => join(podDir(uid), 'containers'),
    podPluginVolumesDir: (uid, pluginName) => join(podDir(uid), 'volumes', escapePluginName(pluginName)),
    podVolumeDir: (uid, pluginName, volumeName) => {
      assertPathToken('volume name', volumeName);
      return join(podDir(uid), 'volumes', escapePluginName(pluginName), volumeName);
    },
  };
}

/**
 * Creates the pod's data directories (0750) if missing: the pod's, then its three subdirectories
 * side by side. Idempotent.
 *
 * Models Kubelet.makePodDataDirs.
 */
export async function makePodDataDirs(paths: PodPaths, uid: string): Promise<void> {
  await mkdir(paths.podDir(uid), { recursive: true, mode: POD_DIR_MODE });
  await Promise.all([paths.podVolumesDir(uid), paths.podPluginsDir(uid), paths.podContainersDir(uid)].map((dir) => mkdir(dir, { recursive: true, mode: POD_DIR_MODE })));
}

/**
 * Creates an emptyDir volume directory with mode 0777 (chmod after mkdir, since the umask applies
 * to mkdir). Idempotent.
 *
 * Models emptyDir.setupDir.
 */
export async function makeEmptyDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: POD_DIR_MODE });
  const st = await lstat(dir);
  if (!st.isDirectory()) throw new Error(`${dir} exists and is not a directory`);
  if ((st.mode & 0o7777) !== EMPTY_DIR_MODE) await chmod(dir, EMPTY_DIR_MODE);
}

/**
 * The UIDs that have a directory under `pods/` (symlinks and files there are reported too, so they
 * can be cleaned up, but never followed).
 *
 * Models Kubelet.listPodsFromDisk.
 */
export async function listPodsFromDisk(paths: PodPaths): Promise<string[]> {
  try {
    const entries = await readdir(paths.podsDir());
    return entries.filter((e) => SAFE_TOKEN.test(e) && e !== '.' && e !== '..').sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}

/**
 * Removes `path` and everything below it without following symlinks (a symlink is unlinked, its
 * target untouched) and without crossing into another filesystem: an entry on a different device
 * than `path` (a mount point) stops the removal with an error and is left alone.
 *
 * Models mount-utils RemoveAllOneFilesystem.
 */
export async function removeAllOneFilesystem(path: string): Promise<void> {
  let top;
  try {
    top = await lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  await removeBelow(path, top.dev);
}

async function removeBelow(path: string, dev: number): Promise<void> {
  let st;
  try {
    st = await lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (st.dev !== dev) throw new Error(`cannot delete directory ${path}: it is on a different device`);
  if (!st.isDirectory()) {
    await unlink(path);
    return;
  }
  for (const entry of await readdir(path)) await removeBelow(join(path, entry), dev);
  await rmdir(path);
}
