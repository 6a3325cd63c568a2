/**
 * This machine's processes as `/proc` shows them, for tests and benchmarks that find, watch or
 * count the processes they started: a nats-server by its config file, every process of a state
 * dir, a process's CPU time. Linux only.
 */
import { readFileSync, readdirSync } from 'node:fs';

/** A live process: its pid, its argv and, when asked for, its environment (`NAME=value` entries). */
export interface ProcessEntry {
  readonly pid: number;
  readonly argv: string[];
  readonly environ?: string[];
}

/**
 * `/proc/<pid>/stat` from field 3 (the state) on, without the command name before it (which may
 * hold spaces and parentheses): field N of proc(5) is at index N − 3. Throws when the process is gone.
 */
export function procStat(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * Every live process but this one (zombies and dead ones left out) whose command line this process
 * may read; with `environ`, also its environment (processes whose environment it may not read are
 * then left out). A process that exits during the scan is left out.
 */
export function liveProcesses(o: { environ?: boolean } = {}): ProcessEntry[] {
  const out: ProcessEntry[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const pid = Number(d);
    if (pid === process.pid) continue;
    try {
      const state = procStat(pid)[0];
      if (state === 'Z' || state === 'X') continue;
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (o.environ !== true) out.push({ pid, argv });
      else out.push({ pid, argv, environ: readFileSync(`/proc/${d}/environ`, 'utf8').split('\0').filter(Boolean) });
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return out;
}
