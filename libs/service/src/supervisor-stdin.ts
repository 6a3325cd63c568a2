/**
 * How a supervised process learns that its supervisor is gone: its stdin is a pipe the supervisor
 * never writes to, and the system closes the supervisor's end when it exits, even by SIGKILL.
 * Its own module (`@splitlet/service/supervisor-stdin`) so that the nats-server guard, a process
 * that loads nothing else of this library, can use it too.
 */

/**
 * Calls `onGone` once, when `stdin` ends, closes or fails. Reading is what sees the end, so the
 * stream is resumed and its data (none is written) dropped.
 */
export function onSupervisorStdinEnd(stdin: NodeJS.ReadableStream, onGone: () => void): void {
  let gone = false;
  const end = (): void => {
    if (gone) return;
    gone = true;
    onGone();
  };
  stdin.on('end', end);
  stdin.on('close', end);
  stdin.on('error', end);
  stdin.on('data', () => undefined);
  stdin.resume();
}
