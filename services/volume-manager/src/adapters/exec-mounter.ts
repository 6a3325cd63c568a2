/**
 * The host's mount table: tmpfs mounts with `mount(8)` / `umount(8)` and mount points read from
 * `/proc/self/mountinfo`.
 *
 * Models k8s.io/mount-utils (mount_linux.go: Mount, Unmount, parseMountInfo).
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import type { Mounter } from '../ports.js';

const run = promisify(execFile);

/** Undoes mountinfo's octal escapes (`\040` is a space). */
function unescapeMountPath(p: string): string {
  return p.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/**
 * The mount points listed in a mountinfo text (field 5 of each line).
 *
 * Models mount-utils parseMountInfo.
 */
export function parseMountPoints(mountinfo: string): string[] {
  const out: string[] = [];
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    const mp = fields[4];
    if (mp !== undefined && mp !== '') out.push(unescapeMountPath(mp));
  }
  return out;
}

/** Options of {@link execMounter}. */
export interface ExecMounterOptions {
  /** @default '/proc/self/mountinfo' */
  readonly mountinfoPath?: string;
  /** Per-command deadline. @default 30000 */
  readonly timeoutMs?: number;
}

/** A {@link Mounter} running `mount -t tmpfs` and `umount` as child processes. */
export function execMounter(options: ExecMounterOptions = {}): Mounter {
  const mountinfoPath = options.mountinfoPath ?? '/proc/self/mountinfo';
  const timeout = options.timeoutMs ?? 30_000;
  const exec = async (cmd: string, args: string[]): Promise<void> => {
    try {
      await run(cmd, args, { timeout });
    } catch (e) {
      const err = e as { stderr?: string; message: string };
      const detail = (err.stderr ?? '').trim() || err.message;
      throw new Error(`${cmd} ${args.join(' ')} failed: ${detail}`, { cause: e });
    }
  };
  return {
    mountTmpfs: (dir, sizeBytes) => exec('mount', ['-t', 'tmpfs', '-o', `size=${Math.max(1, Math.ceil(sizeBytes))}`, 'tmpfs', dir]),
    unmount: (dir) => exec('umount', [dir]),
    mountPointsUnder: async (dir) => {
      const root = resolve(dir);
      let text: string;
      try {
        text = await readFile(mountinfoPath, 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw e;
      }
      return parseMountPoints(text)
        .filter((mp) => mp === root || mp.startsWith(root + sep))
        .sort((a, b) => b.length - a.length);
    },
  };
}
