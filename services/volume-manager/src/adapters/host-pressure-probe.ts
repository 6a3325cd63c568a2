/**
 * The eviction signals of this host: memory.available from /proc/meminfo `MemAvailable`, nodefs
 * from `statfs` of the kubelet root directory, pid.available from the PID limit (the smaller of
 * kernel.pid_max and kernel.threads-max) minus the tasks in /proc/loadavg.
 */
import { readFile, statfs } from 'node:fs/promises';
import { freemem, totalmem } from 'node:os';
import { dirname } from 'node:path';
import type { PressureObservation } from '../node/node-pressure.js';

/** Measures the host's eviction signals for the filesystem holding `rootDir`. */
export async function observeHostPressure(rootDir: string): Promise<PressureObservation> {
  const meminfo = await readFile('/proc/meminfo', 'utf8').catch(() => '');
  const avail = /^MemAvailable:\s+(\d+) kB$/m.exec(meminfo);
  const fs = await statfsNearest(rootDir);
  const pidMax = Math.min(await readNumber('/proc/sys/kernel/pid_max', 32768), await readNumber('/proc/sys/kernel/threads-max', Number.MAX_SAFE_INTEGER));
  const loadavg = await readFile('/proc/loadavg', 'utf8').catch(() => '');
  const tasks = Number(/\d+\/(\d+)/.exec(loadavg)?.[1] ?? 0);
  return {
    memoryAvailableBytes: avail !== null ? Number(avail[1]) * 1024 : freemem(),
    memoryCapacityBytes: totalmem(),
    nodefsAvailableBytes: Number(fs.bavail) * Number(fs.bsize),
    nodefsCapacityBytes: Number(fs.blocks) * Number(fs.bsize),
    nodefsInodesFree: Number(fs.ffree),
    nodefsInodes: Number(fs.files),
    pidAvailable: Math.max(0, pidMax - tasks),
    pidMax,
  };
}

async function statfsNearest(path: string): ReturnType<typeof statfs> {
  for (let p = path; ; p = dirname(p)) {
    try {
      return await statfs(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(p) === p) throw e;
    }
  }
}

async function readNumber(path: string, fallback: number): Promise<number> {
  const n = Number((await readFile(path, 'utf8').catch(() => '')).trim());
  return Number.isFinite(n) && n > 0 ? n : fallback;
}
