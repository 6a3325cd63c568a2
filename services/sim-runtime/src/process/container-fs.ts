/**
 * A simulated container's filesystem: paths under a CRI mount resolve to the mount's host path and
 * are real files; everything else lives in a small in-memory root filesystem private to the container
 * (shared by its process and ExecSync), like a writable image layer.
 */
import * as fs from 'node:fs';
import * as posix from 'node:path/posix';
import * as path from 'node:path';

/** A mount as the simulator needs it. */
export interface SimMount {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
}

/** A filesystem failure, with the errno name and the text busybox prints for it. */
export class SimFsError extends Error {
  override readonly name = 'SimFsError';
  constructor(
    readonly errno: 'ENOENT' | 'EISDIR' | 'ENOTDIR' | 'EROFS' | 'EEXIST' | 'ENOTEMPTY' | 'EIO',
    message: string,
  ) {
    super(message);
  }
}

const ERRNO_TEXT: Record<SimFsError['errno'], string> = {
  ENOENT: 'No such file or directory',
  EISDIR: 'Is a directory',
  ENOTDIR: 'Not a directory',
  EROFS: 'Read-only file system',
  EEXIST: 'File exists',
  ENOTEMPTY: 'Directory not empty',
  EIO: 'I/O error',
};

/** The strerror text of an errno name. */
export function errnoText(errno: SimFsError['errno']): string {
  return ERRNO_TEXT[errno];
}

function fail(errno: SimFsError['errno']): never {
  throw new SimFsError(errno, ERRNO_TEXT[errno]);
}

function fromNode(e: unknown): never {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR' || code === 'EROFS' || code === 'EEXIST' || code === 'ENOTEMPTY') fail(code);
  throw new SimFsError('EIO', (e as Error).message);
}

type Resolved = { kind: 'host'; hostPath: string; readonly: boolean } | { kind: 'mem'; path: string } | { kind: 'null' };

/** Directories every busybox-like image has. */
const IMAGE_DIRS = ['/', '/bin', '/dev', '/etc', '/home', '/proc', '/root', '/run', '/sbin', '/sys', '/tmp', '/usr', '/usr/bin', '/usr/sbin', '/var'];

/** The container's view of files. All methods are synchronous and throw {@link SimFsError}. */
export class ContainerFs {
  readonly #mounts: SimMount[];
  readonly #files = new Map<string, string>();
  readonly #dirs = new Set<string>(IMAGE_DIRS);

  constructor(mounts: readonly SimMount[], hostname: string) {
    // Longest container path first, so nested mounts win.
    this.#mounts = mounts
      .map((m) => ({ ...m, containerPath: posix.normalize(m.containerPath).replace(/\/+$/, '') || '/' }))
      .sort((a, b) => b.containerPath.length - a.containerPath.length);
    this.#files.set('/etc/hostname', `${hostname}\n`);
  }

  /** Normalizes `p` against `cwd` into an absolute container path. */
  absolute(p: string, cwd: string): string {
    return posix.normalize(posix.isAbsolute(p) ? p : posix.join(cwd, p)).replace(/(.)\/+$/, '$1');
  }

  #resolve(p: string, cwd: string): Resolved {
    const abs = this.absolute(p, cwd);
    if (abs === '/dev/null') return { kind: 'null' };
    for (const m of this.#mounts) {
      if (abs === m.containerPath || abs.startsWith(m.containerPath === '/' ? '/' : `${m.containerPath}/`)) {
        const rest = abs.slice(m.containerPath.length);
        return { kind: 'host', hostPath: path.join(m.hostPath, rest), readonly: m.readonly };
      }
    }
    return { kind: 'mem', path: abs };
  }

  /** The contents of a file. */
  readFile(p: string, cwd: string): string {
    const r = this.#resolve(p, cwd);
    if (r.kind === 'null') return '';
    if (r.kind === 'host') {
      try {
        return fs.readFileSync(r.hostPath, 'utf8');
      } catch (e) {
        return fromNode(e);
      }
    }
    const content = this.#files.get(r.path);
    if (content !== undefined) return content;
    if (this.#dirs.has(r.path)) fail('EISDIR');
    return fail('ENOENT');
  }

  /** Writes (or appends to) a file, creating it; the parent directory must exist. */
  writeFile(p: string, cwd: string, data: string, append: boolean): void {
    const r = this.#resolve(p, cwd);
    if (r.kind === 'null') return;
    if (r.kind === 'host') {
      if (r.readonly) fail('EROFS');
      try {
        if (append) fs.appendFileSync(r.hostPath, data);
        else fs.writeFileSync(r.hostPath, data);
      } catch (e) {
        fromNode(e);
      }
      return;
    }
    if (this.#dirs.has(r.path)) fail('EISDIR');
    if (!this.#dirs.has(posix.dirname(r.path))) fail('ENOENT');
    this.#files.set(r.path, (append ? (this.#files.get(r.path) ?? '') : '') + data);
  }

  /** What is at a path: `file`, `dir`, or undefined when nothing is. */
  stat(p: string, cwd: string): { type: 'file' | 'dir'; size: number } | undefined {
    const r = this.#resolve(p, cwd);
    if (r.kind === 'null') return { type: 'file', size: 0 };
    if (r.kind === 'host') {
      try {
        const s = fs.statSync(r.hostPath);
        return { type: s.isDirectory() ? 'dir' : 'file', size: s.size };
      } catch {
        return undefined;
      }
    }
    const content = this.#files.get(r.path);
    if (content !== undefined) return { type: 'file', size: Buffer.byteLength(content) };
    return this.#dirs.has(r.path) ? { type: 'dir', size: 0 } : undefined;
  }

  /** Creates a directory (and its parents with `recursive`). */
  mkdir(p: string, cwd: string, recursive: boolean): void {
    const r = this.#resolve(p, cwd);
    if (r.kind === 'null') fail('EEXIST');
    if (r.kind === 'host') {
      if (r.readonly) fail('EROFS');
      try {
        fs.mkdirSync(r.hostPath, { recursive });
      } catch (e) {
        fromNode(e);
      }
      return;
    }
    if (this.#dirs.has(r.path) || this.#files.has(r.path)) {
      if (recursive && this.#dirs.has(r.path)) return;
      fail('EEXIST');
    }
    const parent = posix.dirname(r.path);
    if (!this.#dirs.has(parent)) {
      if (!recursive) fail('ENOENT');
      this.mkdir(parent, '/', true);
    }
    this.#dirs.add(r.path);
  }

  /** Removes a file, or a directory tree with `recursive`. */
  remove(p: string, cwd: string, recursive: boolean): void {
    const r = this.#resolve(p, cwd);
    if (r.kind === 'null') return;
    if (r.kind === 'host') {
      if (r.readonly) fail('EROFS');
      try {
        const s = fs.lstatSync(r.hostPath);
        if (s.isDirectory() && !recursive) fail('EISDIR');
        fs.rmSync(r.hostPath, { recursive });
      } catch (e) {
        if (e instanceof SimFsError) throw e;
        fromNode(e);
      }
      return;
    }
    if (this.#files.delete(r.path)) return;
    if (!this.#dirs.has(r.path)) fail('ENOENT');
    if (!recursive) fail('EISDIR');
    const prefix = `${r.path}/`;
    for (const f of [...this.#files.keys()]) if (f.startsWith(prefix)) this.#files.delete(f);
    for (const d of [...this.#dirs]) if (d.startsWith(prefix)) this.#dirs.delete(d);
    this.#dirs.delete(r.path);
  }
}

/** The text a shell prints for a filesystem error. */
export function fsErrorText(e: unknown): string {
  return e instanceof SimFsError ? errnoText(e.errno) : String(e);
}
