/**
 * Reads a container run's CRI log file for a remote `splitlet logs`, as the kubelet's
 * `/containerLogs/<ns>/<pod>/<container>` handler does (pkg/kubelet/server/server.go
 * getContainerLogs → kuberuntime ReadLogs), minus the parsing: the bytes go back as stored and the
 * CLI decodes the CRI lines (`<time> <stream> <P|F> <text>`), so `--timestamps` costs nothing.
 *
 * - `offset` reads from a byte offset (follow = ask again from `nextOffset`);
 * - `tailLines` without an offset starts where the last N lines of the file start (the kubelet's
 *   tail.FindTailLineStartIndex: raw lines, so a long line's partial `P` pieces count one each);
 * - at most `limitBytes` per reply, so a chunk fits a NATS message after base64.
 *
 * The path is built from the request's namespace, pod name, UID and container, each checked to be
 * a name token (no `/`, no `..`), so a request can only read inside the pod log directory.
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { KubeletError } from '@splitlet/api';
import type { ContainerLogsReply, ContainerLogsRequest } from '@splitlet/api';
import { findTailLineStartIndex, readFully } from '../adapters/node-files.js';

const DEFAULT_LIMIT = 256 * 1024;
const TOKEN = /^[a-z0-9A-Z]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$/;

/** A log request that cannot be served; `NotFound` when the run has no log file (yet, or any more). */
export class ContainerLogError extends KubeletError {
  override readonly name = 'ContainerLogError';
  constructor(code: 'NotFound' | 'Invalid', message: string) {
    super(code, message, { retryable: false });
  }
}

/** `<podLogDir>/<ns>_<name>_<uid>/<container>/<attempt>.log`, refusing anything that is not a plain name token. */
export function containerLogPath(podLogDir: string, req: Pick<ContainerLogsRequest, 'namespace' | 'podName' | 'podUid' | 'container' | 'attempt'>): string {
  for (const [what, v] of [
    ['namespace', req.namespace],
    ['pod name', req.podName],
    ['pod UID', req.podUid],
    ['container', req.container],
  ] as const) {
    if (!TOKEN.test(v) || v.includes('..')) throw new ContainerLogError('Invalid', `invalid ${what} ${JSON.stringify(v)}`);
  }
  return join(podLogDir, `${req.namespace}_${req.podName}_${req.podUid}`, req.container, `${req.attempt}.log`);
}

/** Reads one chunk of a container's log file. */
export async function readContainerLog(podLogDir: string, req: ContainerLogsRequest): Promise<ContainerLogsReply> {
  const path = containerLogPath(podLogDir, req);
  let fh;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new ContainerLogError('NotFound', `no log file for container ${JSON.stringify(req.container)} of pod ${req.namespace}/${req.podName} (run ${req.attempt})`);
    throw e;
  }
  try {
    const size = (await fh.stat()).size;
    let offset = req.offset ?? (req.tailLines !== undefined ? await findTailLineStartIndex(fh, req.tailLines) : 0);
    offset = Math.min(offset, size);
    const buf = await readFully(fh, offset, Math.min(size - offset, req.limitBytes ?? DEFAULT_LIMIT));
    return { type: 'kubelet.logs.Chunk.v1', data: buf.toString('base64'), offset, nextOffset: offset + buf.length, size };
  } finally {
    await fh.close();
  }
}
