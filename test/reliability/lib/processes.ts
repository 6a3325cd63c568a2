/**
 * Finding the OS processes of a `splitlet up` to kill or pause them.
 */
import { liveProcesses } from '@splitlet/testkit';
import type { Instance } from '../../integration/harness.ts';

/** The nats-server processes of `stateDir` (their `-sd` store dir is in it), with their command lines. */
export function natsServers(stateDir: string): { pid: number; cmd: string[] }[] {
  return liveProcesses()
    .filter((p) => (p.argv[0] ?? '').endsWith('nats-server') && p.argv.some((a) => a.startsWith(stateDir)))
    .map((p) => ({ pid: p.pid, cmd: p.argv }));
}

/**
 * The pid of a process of the given type: a supervised process by name (`pod-worker` picks one
 * replica at random), or `nats-server` (one server at random).
 */
export function pidOf(inst: Instance, type: string): { name: string; pid: number } {
  if (type === 'nats-server') {
    const servers = natsServers(inst.stateDir);
    const s = servers[Math.floor(Math.random() * servers.length)];
    if (!s) throw new Error(`no nats-server of ${inst.stateDir} runs`);
    return { name: 'nats-server', pid: s.pid };
  }
  const candidates = inst.info().processes.filter((p) => (p.name === type || p.name.startsWith(`${type}-`)) && p.pid > 0);
  const p = candidates[Math.floor(Math.random() * candidates.length)];
  if (!p) throw new Error(`no process ${type} in ${inst.stateDir}`);
  return { name: p.name, pid: p.pid };
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
