/**
 * `splitlet events [-w]`: the node's events as `kubectl get events` prints them, oldest first;
 * `-w` keeps streaming new ones until Ctrl-C.
 */
import { KubeEventMessage, Streams, Subjects, kubeEventsOf, type KubeEvent } from '@splitlet/api';
import type { CliTarget } from '../target.js';
import { untilInterrupted } from '../interruptible.js';
import { humanDuration } from '../printers/pod-table.js';

function row(e: KubeEvent, now: number): string[] {
  const obj = `${e.involvedObject.kind.toLowerCase()}/${e.involvedObject.name}`;
  return [humanDuration(now - Date.parse(e.timestamp)), e.eventType, e.reason, obj, e.message];
}

export async function events(t: CliTarget, opts: { watch: boolean; output: string | undefined }, out: NodeJS.WritableStream): Promise<void> {
  const bus = t.bus;
  await untilInterrupted(async (signal) => {
    const widths = [9, 7, 18, 40];
    const header = ['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'];
    const line = (cells: string[]): string =>
      cells
        .map((c, i) => (i < widths.length ? c.padEnd(Math.max(widths[i]!, c.length) + 3) : c))
        .join('')
        .trimEnd();
    let printedHeader = false;
    await bus.readStream(
      KubeEventMessage,
      Streams.events,
      Subjects.eventsAll(t.nodeName),
      (m) => {
        for (const e of kubeEventsOf(m)) {
          if (opts.output === 'json') {
            out.write(`${JSON.stringify(e)}\n`);
            continue;
          }
          if (!printedHeader) {
            out.write(`${line(header)}\n`);
            printedHeader = true;
          }
          out.write(`${line(row(e, Date.now()))}\n`);
        }
      },
      { follow: opts.watch, signal },
    );
    if (!printedHeader && opts.output !== 'json') out.write('No events found.\n');
  });
}
