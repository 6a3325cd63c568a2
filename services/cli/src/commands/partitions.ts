/**
 * `splitlet get partitions [-o wide|json] [-w]`: which pod-worker instance holds which partition
 * lease of the node (`sl_leases`), and the live members (`sl_members` heartbeats), so scaling
 * pod-workers up or down shows partitions moving. `-w` prints the table again on every change.
 */
import { Buckets, Keys, MemberHeartbeat, PartitionLease } from '@splitlet/api';
import type { CliTarget } from '../target.js';
import { CliError } from '../state-dir.js';
import { formatTable, humanDuration } from '../printers/pod-table.js';
import { pollUntilInterrupted } from '../interruptible.js';

/** One partition's lease as read from KV. */
export interface PartitionRow {
  partition: number;
  holder: string;
  acquiredAt: string;
  revision: number;
}

/** One live pod-worker instance. */
export interface MemberRow {
  instance: string;
  at: string;
}

/** `0-3,7,9-10` from a set of numbers. */
export function compressRanges(ns: readonly number[]): string {
  const sorted = [...ns].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/** The table: one row per instance (members without partitions too), then unowned partitions. */
export function partitionsTable(rows: readonly PartitionRow[], members: readonly MemberRow[], now: number, wide: boolean): string {
  if (wide) {
    return formatTable(
      ['PARTITION', 'HOLDER', 'EPOCH', 'AGE'],
      [...rows].sort((a, b) => a.partition - b.partition).map((r) => [String(r.partition), r.holder, String(r.revision), humanDuration(now - Date.parse(r.acquiredAt))]),
    );
  }
  const byHolder = new Map<string, number[]>();
  for (const m of members) byHolder.set(m.instance, []);
  for (const r of rows) byHolder.set(r.holder, [...(byHolder.get(r.holder) ?? []), r.partition]);
  const heartbeat = new Map(members.map((m) => [m.instance, m.at]));
  const table = formatTable(
    ['INSTANCE', 'PARTITIONS', 'COUNT', 'HEARTBEAT'],
    [...byHolder.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([inst, ps]) => [
        inst,
        ps.length ? compressRanges(ps) : '<none>',
        String(ps.length),
        heartbeat.has(inst) ? `${humanDuration(now - Date.parse(heartbeat.get(inst)!))} ago` : '<gone>',
      ]),
  );
  return table;
}

async function read(t: CliTarget): Promise<{ rows: PartitionRow[]; members: MemberRow[] }> {
  const [leases, members] = await Promise.all([t.bus.kv(Buckets.leases, PartitionLease), t.bus.kv(Buckets.members, MemberHeartbeat)]);
  const prefix = Keys.nodePrefix(t.nodeName);
  const rows: PartitionRow[] = [];
  for (const e of await leases.list(prefix)) {
    if (e.value === null) continue;
    const partition = Number(e.key.slice(e.key.lastIndexOf('.') + 1));
    if (Number.isInteger(partition)) rows.push({ partition, holder: e.value.holder, acquiredAt: e.value.acquiredAt, revision: e.revision });
  }
  const live: MemberRow[] = [];
  for (const e of await members.list(prefix)) if (e.value !== null) live.push({ instance: e.value.instance, at: e.value.at });
  return { rows, members: live };
}

export async function getPartitions(t: CliTarget, opts: { output: string | undefined; watch: boolean }, out: NodeJS.WritableStream): Promise<void> {
  if (opts.output !== undefined && opts.output !== 'wide' && opts.output !== 'json')
    throw new CliError(`unknown output format "${opts.output}" for partitions: use -o wide or -o json`);
  const render = async (): Promise<string> => {
    const { rows, members } = await read(t);
    if (opts.output === 'json') return `${JSON.stringify({ node: t.nodeName, members, partitions: rows.sort((a, b) => a.partition - b.partition) }, null, 2)}\n`;
    if (rows.length === 0 && members.length === 0) return `No pod-worker holds a partition of node ${t.nodeName}.\n`;
    return partitionsTable(rows, members, Date.now(), opts.output === 'wide');
  };
  if (!opts.watch) {
    out.write(await render());
    return;
  }
  // Holders only: heartbeat ages change every read and would reprint the table each time.
  let last = '';
  const show = async (): Promise<void> => {
    const { rows, members } = await read(t);
    const key = JSON.stringify([rows.map((r) => [r.partition, r.holder]).sort(), members.map((m) => m.instance).sort()]);
    if (key === last) return;
    last = key;
    out.write(`${new Date().toISOString()}\n${partitionsTable(rows, members, Date.now(), opts.output === 'wide')}\n`);
  };
  await show();
  await pollUntilInterrupted(1000, show);
}
