/**
 * What one message between two processes costs this machine: a 1 KiB message over loopback TCP to
 * a child process that writes it back, measured as the CPU both processes spend per round trip —
 * sent back to back (both stay busy) and then spaced out (both go idle between messages, as the
 * node's processes do between a steady arrival's pods). Every hop of a pod's path is such a
 * message, so this is the price of a hop below any splitlet code: the reference that says how much
 * of a pod's CPU the machine itself takes.
 */
import { fork } from 'node:child_process';
import { connect } from 'node:net';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The echo process: writes back what it reads, reports its CPU (µs) when asked. Plain JS, no loader. */
const ECHO = `
const net = require('node:net');
const srv = net.createServer((s) => s.on('data', (d) => s.write(d)));
srv.listen(0, '127.0.0.1', () => process.send({ port: srv.address().port }));
process.on('message', () => { const u = process.cpuUsage(); process.send({ cpu: u.user + u.system }); });
process.on('disconnect', () => process.exit(0));
`;

/** CPU µs per round trip of both processes together. */
export interface RoundTripCost {
  /** Messages back to back. */
  readonly busyMicros: number;
  /** Messages `gapMs` apart. */
  readonly idleMicros: number;
  readonly gapMs: number;
}

/** Measures {@link RoundTripCost}: `busyN` round trips back to back, then `idleN` of them `gapMs` apart. */
export async function loopbackRoundTrip(busyN = 5000, idleN = 300, gapMs = 20): Promise<RoundTripCost> {
  const dir = mkdtempSync(join(tmpdir(), 'sl-rtt-'));
  const script = join(dir, 'echo.cjs');
  writeFileSync(script, ECHO);
  const child = fork(script, [], { execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  try {
    const ask = <T>(): Promise<T> =>
      new Promise<T>((resolve, reject) => {
        child.once('message', (m) => resolve(m as T));
        child.once('exit', (code) => reject(new Error(`the echo process exited (${code})`)));
      });
    const { port } = await ask<{ port: number }>();
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.setNoDelay(true);
    const msg = Buffer.alloc(1024, 0x61);
    const echoCpu = async (): Promise<number> => {
      const answer = ask<{ cpu: number }>();
      child.send('cpu');
      return (await answer).cpu;
    };
    const roundTrip = (): Promise<void> =>
      new Promise<void>((resolve) => {
        let got = 0;
        const onData = (d: Buffer): void => {
          got += d.length;
          if (got < msg.length) return;
          socket.off('data', onData);
          resolve();
        };
        socket.on('data', onData);
        socket.write(msg);
      });
    const measure = async (n: number, gap: number): Promise<number> => {
      const e0 = await echoCpu();
      const c0 = process.cpuUsage();
      for (let i = 0; i < n; i++) {
        await roundTrip();
        if (gap > 0) await new Promise((r) => setTimeout(r, gap));
      }
      const c = process.cpuUsage(c0);
      const e1 = await echoCpu();
      return (c.user + c.system + e1 - e0) / n;
    };
    await measure(200, 0); // warm up both ends
    const busyMicros = await measure(busyN, 0);
    const idleMicros = await measure(idleN, gapMs);
    socket.destroy();
    return { busyMicros, idleMicros, gapMs };
  } finally {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}
