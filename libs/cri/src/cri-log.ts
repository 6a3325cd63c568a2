/**
 * Reading the CRI container log format, as containerd and CRI-O write it and the kubelet reads it:
 * one record per line, `<RFC3339Nano time> <stdout|stderr> <tag>[:<more tags>] <content>`, where the
 * tag `P` marks a partial line continued by the next record and `F` a full one.
 *
 * Models pkg/kubelet/kuberuntime/logs/logs.go (parseCRILog).
 */

/** One parsed record of a CRI log. */
export interface CriLogRecord {
  /** The timestamp as written (RFC 3339). */
  readonly time: string;
  readonly stream: 'stdout' | 'stderr';
  /** A `P` record: the line goes on in the next record. */
  readonly partial: boolean;
  /**
   * The content: for a full record everything after the tag (its newline included when the line
   * had one), for a partial one without a trailing newline.
   */
  readonly content: Buffer;
}

const SPACE = 0x20;
const NEWLINE = 0x0a;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Parses one CRI log line (with or without its newline); undefined when it is not in the CRI
 * format (no RFC 3339 time, a stream other than stdout/stderr, or no tag).
 */
export function parseCriLogLine(line: Buffer | string): CriLogRecord | undefined {
  const buf = typeof line === 'string' ? Buffer.from(line, 'utf8') : line;
  const sp1 = buf.indexOf(SPACE);
  if (sp1 < 0) return undefined;
  const time = buf.subarray(0, sp1).toString('latin1');
  if (!RFC3339.test(time)) return undefined;
  const sp2 = buf.indexOf(SPACE, sp1 + 1);
  if (sp2 < 0) return undefined;
  const stream = buf.subarray(sp1 + 1, sp2).toString('latin1');
  if (stream !== 'stdout' && stream !== 'stderr') return undefined;
  const sp3 = buf.indexOf(SPACE, sp2 + 1);
  if (sp3 < 0) return undefined;
  const partial =
    buf
      .subarray(sp2 + 1, sp3)
      .toString('latin1')
      .split(':')[0] === 'P';
  let content = buf.subarray(sp3 + 1);
  if (partial && content.length > 0 && content[content.length - 1] === NEWLINE) content = content.subarray(0, -1);
  return { time, stream, partial, content };
}
