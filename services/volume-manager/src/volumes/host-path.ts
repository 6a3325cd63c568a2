/**
 * hostPath volumes: path validation and the `type` checks.
 *
 * Models pkg/volume/hostpath/host_path.go (SetUp, checkType / checkTypeInternal, fileTypeChecker,
 * makeDir, makeFile) and pkg/volume/util/validation (ValidatePathNoBacksteps).
 */
import { constants as fsConstants } from 'node:fs';
import { mkdir, open, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';

/** `spec.volumes[].hostPath.type`. `""` (or absent) means no check at all. */
export type HostPathType = '' | 'DirectoryOrCreate' | 'Directory' | 'FileOrCreate' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

/**
 * What the type check needs to know about a path. The real one stats the host; tests use a fake.
 *
 * Models hostpath.hostPathTypeChecker.
 */
export interface HostPathTypeChecker {
  exists(): Promise<boolean>;
  isFile(): Promise<boolean>;
  makeFile(): Promise<void>;
  isDir(): Promise<boolean>;
  makeDir(): Promise<void>;
  isBlock(): Promise<boolean>;
  isChar(): Promise<boolean>;
  isSocket(): Promise<boolean>;
  getPath(): string;
}

/**
 * Checks `type` against the path, creating it for the `…OrCreate` types (a directory 0755, a file
 * 0644). Resolves when the path is acceptable; rejects with the kubelet's message otherwise, e.g.
 * `hostPath type check failed: /data is not a directory`.
 *
 * Models hostpath.checkTypeInternal.
 */
export async function checkHostPathType(ftc: HostPathTypeChecker, type: HostPathType | undefined): Promise<void> {
  const path = ftc.getPath();
  switch (type ?? '') {
    case '':
      return;
    case 'DirectoryOrCreate':
    case 'Directory':
      // DirectoryOrCreate creates a missing path; an existing one must be a directory (Go: fallthrough).
      if (type === 'DirectoryOrCreate' && !(await ftc.exists())) {
        await ftc.makeDir();
        return;
      }
      if (!(await ftc.isDir())) throw new Error(`hostPath type check failed: ${path} is not a directory`);
      return;
    case 'FileOrCreate':
    case 'File':
      if (type === 'FileOrCreate' && !(await ftc.exists())) {
        await ftc.makeFile();
        return;
      }
      if (!(await ftc.isFile())) throw new Error(`hostPath type check failed: ${path} is not a file`);
      return;
    case 'Socket':
      if (!(await ftc.isSocket())) throw new Error(`hostPath type check failed: ${path} is not a socket file`);
      return;
    case 'CharDevice':
      if (!(await ftc.isChar())) throw new Error(`hostPath type check failed: ${path} is not a character device`);
      return;
    case 'BlockDevice':
      if (!(await ftc.isBlock())) throw new Error(`hostPath type check failed: ${path} is not a block device`);
      return;
    default:
      throw new Error(`${String(type)} is an invalid volume type`);
  }
}

/**
 * Rejects a path with a `..` element, with the kubelet's message.
 *
 * Models hostPathMounter.SetUp (`invalid HostPath`) and validation.ValidatePathNoBacksteps.
 */
export function validateHostPath(path: string): void {
  if (path.split('/').includes('..')) throw new Error(`invalid HostPath \`${path}\`: must not contain '..'`);
}

/**
 * The real checker: `stat` follows symlinks (as Go's os.Stat does), a missing path is "not a …".
 *
 * Models hostpath.fileTypeChecker over hostutil.GetFileType.
 */
export function fileTypeChecker(path: string): HostPathTypeChecker {
  const info = async (): Promise<Stats | undefined> => {
    try {
      return await stat(path);
    } catch {
      return undefined;
    }
  };
  return {
    exists: async () => (await info()) !== undefined,
    isFile: async () => (await info())?.isFile() ?? false,
    isDir: async () => (await info())?.isDirectory() ?? false,
    isBlock: async () => (await info())?.isBlockDevice() ?? false,
    isChar: async () => (await info())?.isCharacterDevice() ?? false,
    isSocket: async () => (await info())?.isSocket() ?? false,
    makeDir: async () => {
      await mkdir(path, { recursive: true, mode: 0o755 });
    },
    makeFile: async () => {
      // O_CREAT without O_EXCL: an existing file or directory is not an error (hostpath.makeFile).
      try {
        const fh = await open(path, fsConstants.O_CREAT | fsConstants.O_RDONLY, 0o644);
        await fh.close();
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EISDIR' && (e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
    },
    getPath: () => path,
  };
}

/**
 * Sets up one hostPath volume: validates the path, then checks (or creates) it per `type`.
 * Nothing is created under the pod directory; the container mounts the host path directly.
 *
 * Models hostPathMounter.SetUp.
 */
export async function setUpHostPath(path: string, type: HostPathType | undefined, checker: (p: string) => HostPathTypeChecker = fileTypeChecker): Promise<void> {
  validateHostPath(path);
  await checkHostPathType(checker(path), type);
}
