/**
 * The nats-server of `splitlet up`, run under a small guard process so that it is supervised like
 * every other part and never outlives its supervisor:
 *
 * - spawns `NATS_SERVER_BIN` with the JSON array `NATS_SERVER_ARGS` (same port and store dir on every
 *   start, so a restarted server serves the same streams and buckets);
 * - passes SIGTERM/SIGINT on to the server and exits as it exits (the supervisor restarts the guard,
 *   hence the server, when it dies);
 * - once its supervisor `SPLITLET_SUPERVISOR_PID` is gone (killed, even with SIGKILL), waits
 *   `NATS_GUARD_LINGER_MS` so the other processes, which notice the same, can drain through NATS,
 *   then stops the server (SIGKILL 2 s after SIGTERM). It notices as they do: the end of its stdin
 *   (`SPLITLET_SUPERVISOR_STDIN`: a pipe the supervisor never writes to, closed by the system when
 *   the supervisor exits), or else its parent no longer being the supervisor, checked every 500 ms.
 *
 * nats-server has no parent-death option of its own; this guard is that option.
 */
import { spawn } from 'node:child_process';
import { onSupervisorStdinEnd } from '@splitlet/service/supervisor-stdin';

const CHECK_MS = 500;
const KILL_AFTER_MS = 2000;

function main(): void {
  // Our stderr is a pipe to the supervisor: once it is gone, writing there fails (EPIPE) and must not end us.
  process.stderr.on('error', () => undefined);
  const bin = process.env['NATS_SERVER_BIN'] ?? 'nats-server';
  const args = JSON.parse(process.env['NATS_SERVER_ARGS'] ?? '[]') as string[];
  const supervisorPid = Number(process.env['SPLITLET_SUPERVISOR_PID'] ?? '0');
  const lingerMs = Number(process.env['NATS_GUARD_LINGER_MS'] ?? '3000');
  const child = spawn(bin, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  child.once('error', (e) => {
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'error', service: 'nats-server', msg: `cannot run ${bin}: ${e.message}` })}\n`);
    process.exit(1);
  });
  child.once('exit', (code, signal) => {
    if (signal !== null) {
      process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'warn', service: 'nats-server', msg: `nats-server ended by ${signal}` })}\n`);
    }
    process.exit(code ?? 1);
  });
  const stop = (): void => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  if (supervisorPid <= 1) return;
  let gone = false;
  const supervisorGone = (how: string): void => {
    if (gone) return;
    gone = true;
    process.stderr.write(
      `${JSON.stringify({ time: new Date().toISOString(), level: 'warn', service: 'nats-server', msg: 'supervisor is gone, stopping nats-server', how, lingerMs })}\n`,
    );
    setTimeout(stop, lingerMs);
  };
  if (process.env['SPLITLET_SUPERVISOR_STDIN'] === '1') {
    onSupervisorStdinEnd(process.stdin, () => supervisorGone('its stdin closed'));
    return;
  }
  const watch = setInterval(() => {
    if (process.ppid === supervisorPid) return;
    clearInterval(watch);
    supervisorGone(`its parent is now ${process.ppid}`);
  }, CHECK_MS);
}

main();
