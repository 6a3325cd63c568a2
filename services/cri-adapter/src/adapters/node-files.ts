/**
 * The node's files as kuberuntime touches them: resolv.conf, /etc/hosts, the pod log directories,
 * the kubelet-managed files in the pod directory, termination-message files and container logs.
 */
import { chmod, mkdir, open, readdir, readFile, realpath, rm, writeFile, type FileHandle } from 'node:fs/promises';
import type { LogFileRemover, NodeFiles } from '../ports.js';

/** The node's hosts file (the kubelet's etcHostsPath). */
const ETC_HOSTS_PATH = '/etc/hosts';

/** How far tail.FindTailLineStartIndex reads back at a time. */
const TAIL_BLOCK_SIZE = 1024;

/** Go's (Linux strerror) texts where libuv words an errno differently. */
const GO_ERRNO_TEXT: Readonly<Record<string, string>> = {
  EISDIR: 'is a directory',
  EIO: 'input/output error',
  ELOOP: 'too many levels of symbolic links',
  ENAMETOOLONG: 'file name too long',
  ENOSPC: 'no space left on device',
};

/** Go's operation names for the syscalls Node reports. */
const GO_OP: Readonly<Record<string, string>> = { realpath: 'lstat', scandir: 'open', fstat: 'stat' };

/** A node file operation failed. `code` is the errno name (`ENOENT` …) when there is one. */
export class NodeFileError extends Error {
  override readonly name = 'NodeFileError';
  readonly code: string | undefined;

  constructor(message: string, code: string | undefined, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** Go's `*PathError` text for a Node fs error: `<op> <path>: <errno text>`. */
function goPathErrorText(e: unknown, path: string, op?: string): string {
  const err = e as NodeJS.ErrnoException;
  if (typeof err?.code !== 'string') return e instanceof Error ? e.message : String(e);
  const libuvText = err.message.replace(/^[A-Z0-9_]+: /, '').replace(/, \w+ '.*'$/s, '');
  const syscall = op ?? err.syscall ?? 'open';
  return `${GO_OP[syscall] ?? syscall} ${path}: ${GO_ERRNO_TEXT[err.code] ?? libuvText}`;
}

function pathError(e: unknown, path: string, op?: string, prefix = ''): NodeFileError {
  return new NodeFileError(`${prefix}${goPathErrorText(e, path, op)}`, (e as NodeJS.ErrnoException)?.code, { cause: e });
}

/** Reads up to `length` bytes at `position` (fewer at the end of the file). */
export async function readFully(fh: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let off = 0;
  while (off < length) {
    const { bytesRead } = await fh.read(buf, off, length - off, position + off);
    if (bytesRead === 0) break;
    off += bytesRead;
  }
  return buf.subarray(0, off);
}

/**
 * The offset where the last `n` lines of the file start (a last line without a newline is not
 * counted). Models tail.FindTailLineStartIndex.
 */
export async function findTailLineStartIndex(fh: FileHandle, n: number): Promise<number> {
  if (n < 0) return 0;
  const { size } = await fh.stat();
  let left = 0;
  let count = 0;
  let block: Buffer = Buffer.alloc(0);
  for (let right = size; right > 0 && count <= n; right -= TAIL_BLOCK_SIZE) {
    left = Math.max(right - TAIL_BLOCK_SIZE, 0);
    block = await readFully(fh, left, right - left);
    for (const b of block) if (b === 0x0a) count++;
  }
  for (; count > n; count--) {
    const idx = block.indexOf(0x0a) + 1;
    block = block.subarray(idx);
    left += idx;
  }
  return left;
}

/**
 * {@link NodeFiles} (and the {@link LogFileRemover} container GC uses) on the local filesystem.
 * `resolvConf` '' disables the resolver config (the kubelet's `--resolv-conf=""`), and
 * readResolvConf then returns ''.
 */
export function createNodeFiles(resolvConf: string): NodeFiles & LogFileRemover {
  return {
    readResolvConf: async () => (resolvConf === '' ? '' : readFile(resolvConf, 'utf8')),
    readNodeHostsFile: async () => {
      try {
        return await readFile(ETC_HOSTS_PATH);
      } catch (e) {
        throw pathError(e, ETC_HOSTS_PATH);
      }
    },
    ensureDir: async (path, mode = 0o755) => {
      try {
        await mkdir(path, { recursive: true, mode });
      } catch (e) {
        throw pathError(e, path, 'mkdir');
      }
    },
    listDir: (path) => readdir(path),
    writeFile: async (path, data, mode) => {
      try {
        await writeFile(path, data, { mode });
        await chmod(path, mode);
      } catch (e) {
        throw pathError(e, path);
      }
    },
    readAtMost: async (path, max) => {
      let fh: FileHandle;
      try {
        fh = await open(path, 'r');
      } catch (e) {
        throw pathError(e, path, 'open');
      }
      try {
        const { size } = await fh.stat();
        if (size === 0) return Buffer.alloc(0);
        const n = Math.min(size, max);
        return await readFully(fh, size - n, n);
      } catch (e) {
        throw pathError(e, path);
      } finally {
        await fh.close();
      }
    },
    readLogTail: async (path, lines) => {
      let resolved: string;
      try {
        resolved = await realpath(path);
      } catch (e) {
        throw pathError(e, path, 'lstat', `failed to try resolving symlinks in path ${JSON.stringify(path)}: `);
      }
      let fh: FileHandle;
      try {
        fh = await open(resolved, 'r');
      } catch (e) {
        throw pathError(e, resolved, 'open', `failed to open log file ${JSON.stringify(resolved)}: `);
      }
      try {
        let start: number;
        try {
          start = await findTailLineStartIndex(fh, lines);
        } catch (e) {
          throw pathError(e, resolved, undefined, `failed to tail ${lines} lines of log file ${JSON.stringify(resolved)}: `);
        }
        try {
          const { size } = await fh.stat();
          return await readFully(fh, start, Math.max(size - start, 0));
        } catch (e) {
          throw pathError(e, resolved, undefined, `failed to read log file ${JSON.stringify(resolved)}: `);
        }
      } finally {
        await fh.close();
      }
    },
    removeFile: async (path) => {
      await rm(path, { force: true });
    },
    removeAll: async (path) => {
      await rm(path, { recursive: true, force: true });
    },
  };
}
