import type { ChildProcess } from 'node:child_process';

// The one piece of module state in testkit, on purpose: child processes still running when the
// test process exits (a failed test that never reached its `stop()`) are SIGKILLed rather than
// left behind holding ports and temp dirs. One shared 'exit' listener instead of one per child.
const live = new Set<ChildProcess>();
let installed = false;

function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
}

/** Tracks `child` until it exits; SIGKILLs it if this process exits first. */
export function reapOnExit(child: ChildProcess): void {
  if (!installed) {
    process.on('exit', killAll);
    installed = true;
  }
  live.add(child);
  child.once('exit', () => live.delete(child));
}
