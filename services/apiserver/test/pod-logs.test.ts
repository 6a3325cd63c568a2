/**
 * pods/log logic: PodLogOptions validation, the container and the run a request reads (with the
 * API server's and the kubelet's texts), CRI records printed as the kubelet prints them, and the
 * streaming against a fake node reader (follow ends when the container stops).
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import type { ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import type { ContainerLogsReply, ContainerLogsRequest } from '@splitlet/api';
import { CriLogPrinter, logAttempt, logContainer, parsePodLogOptions, streamPodLog } from '../src/http/pod-logs.js';
import { ApiError } from '../src/http/api-errors.js';
import type { KubeObject } from '../src/storage/object-store.js';

function pod(status: Record<string, unknown>[] = [], containers = ['app'], nodeName = 'node-a'): KubeObject {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'u1' },
    spec: { nodeName, containers: containers.map((name) => ({ name })), initContainers: [{ name: 'init' }] },
    status: { containerStatuses: status },
  };
}

const apiError = (fn: () => unknown): ApiError => {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ApiError);
    return e;
  }
  assert.fail('no error');
};

describe('parsePodLogOptions', () => {
  it('reads the query and refuses what ValidatePodLogOptions refuses, as 422 with the field', () => {
    assert.deepEqual(parsePodLogOptions(new URLSearchParams('container=app&follow=true&tailLines=3&timestamps=true&limitBytes=10'), 'web'), {
      container: 'app',
      follow: true,
      previous: false,
      timestamps: true,
      tailLines: 3,
      limitBytes: 10,
    });
    const e = apiError(() => parsePodLogOptions(new URLSearchParams('tailLines=-1'), 'web'));
    assert.equal(e.code, 422);
    assert.equal(e.message, 'PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0');
    assert.equal(
      apiError(() => parsePodLogOptions(new URLSearchParams('sinceSeconds=0'), 'web')).message,
      'PodLogOptions "web" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0',
    );
    assert.equal(
      apiError(() => parsePodLogOptions(new URLSearchParams('sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z'), 'web')).message,
      'PodLogOptions "web" is invalid: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified',
    );
    assert.equal(apiError(() => parsePodLogOptions(new URLSearchParams('tailLines=x'), 'web')).code, 400);
  });
});

describe('logContainer and logAttempt', () => {
  it('defaults to the only container, names the choices otherwise, refuses unknown names', () => {
    assert.equal(logContainer(pod(), undefined), 'app');
    assert.equal(logContainer(pod(), 'init'), 'init');
    assert.equal(apiError(() => logContainer(pod([], ['a', 'b']), undefined)).message, 'a container name must be specified for pod web, choose one of: [init a b]');
    const e = apiError(() => logContainer(pod(), 'x'));
    assert.equal([e.code, e.message].join(' '), '400 container x is not valid for pod web');
  });

  it('picks the run as the kubelet does, with its texts', () => {
    const running = { name: 'app', restartCount: 2, state: { running: {} }, lastState: { terminated: { exitCode: 1 } } };
    assert.equal(logAttempt(pod([running]), 'app', false), 2);
    assert.equal(logAttempt(pod([running]), 'app', true), 1);
    const crashLoop = { name: 'app', restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1 } } };
    assert.equal(logAttempt(pod([crashLoop]), 'app', false), 3);
    assert.equal(logAttempt(pod([crashLoop]), 'app', true), 3);
    assert.equal(apiError(() => logAttempt(pod([]), 'app', false)).message, 'container "app" in pod "web" is not available');
    assert.equal(
      apiError(() => logAttempt(pod([{ name: 'app', restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } }]), 'app', false)).message,
      'container "app" in pod "web" is waiting to start: ContainerCreating',
    );
    assert.equal(
      apiError(() => logAttempt(pod([{ name: 'app', state: { waiting: { reason: 'ImagePullBackOff' } } }]), 'app', false)).message,
      'container "app" in pod "web" is waiting to start: trying and failing to pull image',
    );
    assert.equal(
      apiError(() => logAttempt(pod([{ name: 'app', state: { waiting: { reason: 'ErrImagePull' } } }]), 'app', false)).message,
      'container "app" in pod "web" is waiting to start: image can\'t be pulled',
    );
    assert.equal(apiError(() => logAttempt(pod([{ name: 'app', state: { running: {} } }]), 'app', true)).message, 'previous terminated container "app" in pod "web" not found');
  });
});

describe('CriLogPrinter', () => {
  it('joins partial records, keeps stderr and stdout in order, holds back an unfinished line', () => {
    const p = new CriLogPrinter({ timestamps: false });
    const out = p.push(Buffer.from('2026-01-01T00:00:00.1Z stdout P hel\n2026-01-01T00:00:00.2Z stdout F lo\n2026-01-01T00:00:01Z stderr F oops\n2026-01-01T00:00:02Z std'));
    assert.equal(out.toString(), 'hello\noops\n');
    assert.equal(p.push(Buffer.from('out F last\n')).toString(), 'last\n');
    assert.equal(p.flush().toString(), '');
  });

  it('prefixes the record time with timestamps and drops lines before since', () => {
    const p = new CriLogPrinter({ timestamps: true, sinceMs: Date.parse('2026-01-01T00:00:01Z') });
    const out = p.push(Buffer.from('2026-01-01T00:00:00.5Z stdout F early\n2026-01-01T00:00:01.25Z stdout F late\n'));
    assert.equal(out.toString(), '2026-01-01T00:00:01.25Z late\n');
  });
});

/** A response stand-in that collects what is written. */
function fakeResponse(): { res: ServerResponse; body: () => string; status: () => number; ended: Promise<void> } {
  const sink = new PassThrough();
  const chunks: Buffer[] = [];
  let code = 0;
  sink.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise<void>((resolve) => sink.on('end', () => resolve()));
  const res = Object.assign(sink, {
    writeHead(c: number) {
      code = c;
      return res;
    },
    flushHeaders() {},
  }) as unknown as ServerResponse;
  return { res, body: () => Buffer.concat(chunks).toString(), status: () => code, ended };
}

describe('streamPodLog', () => {
  const line = (n: number): string => `2026-01-01T00:00:0${n}Z stdout F line ${n}\n`;

  it('reads the whole file in chunks, then ends (no follow); tailLines only on the first read', async () => {
    const file = Buffer.from(line(1) + line(2) + line(3));
    const reqs: ContainerLogsRequest[] = [];
    const read = async (_node: string, req: ContainerLogsRequest): Promise<ContainerLogsReply> => {
      reqs.push(req);
      const from = req.offset ?? (req.tailLines !== undefined ? file.length - line(3).length : 0);
      const to = Math.min(file.length, from + 10);
      return { type: 'kubelet.logs.Chunk.v1', data: file.subarray(from, to).toString('base64'), offset: from, nextOffset: to, size: file.length };
    };
    const r = fakeResponse();
    const p = pod([{ name: 'app', restartCount: 0, state: { running: {} } }]);
    await streamPodLog({ read, failure: () => ({ kind: 'Other', message: '' }), currentPod: async () => p, now: Date.now, signal: new AbortController().signal }, r.res, p, {
      container: 'app',
      follow: false,
      previous: false,
      timestamps: false,
      tailLines: 1,
    });
    assert.equal(r.body(), 'line 3\n');
    assert.equal(reqs[0]?.tailLines, 1);
    assert.ok(reqs.slice(1).every((q) => q.tailLines === undefined && q.offset !== undefined));
    assert.ok(reqs.every((q) => q.attempt === 0 && q.podUid === 'u1' && q.container === 'app'));
    // limitBytes cuts the printed output.
    const limited = fakeResponse();
    await streamPodLog({ read, failure: () => ({ kind: 'Other', message: '' }), currentPod: async () => p, now: Date.now, signal: new AbortController().signal }, limited.res, p, {
      container: 'app',
      follow: false,
      previous: false,
      timestamps: false,
      limitBytes: 9,
    });
    assert.equal(limited.body(), 'line 1\nli');
  });

  it('follows: new bytes as they are written, until the container stops running', async () => {
    let file = Buffer.from(line(1));
    let current = pod([{ name: 'app', restartCount: 0, state: { running: {} } }]);
    const read = async (_node: string, req: ContainerLogsRequest): Promise<ContainerLogsReply> => {
      const from = req.offset ?? 0;
      return { type: 'kubelet.logs.Chunk.v1', data: file.subarray(from).toString('base64'), offset: from, nextOffset: file.length, size: file.length };
    };
    const r = fakeResponse();
    const done = streamPodLog(
      { read, failure: () => ({ kind: 'Other', message: '' }), currentPod: async () => current, now: Date.now, signal: new AbortController().signal, pollMs: 10 },
      r.res,
      current,
      {
        container: 'app',
        follow: true,
        previous: false,
        timestamps: false,
      },
    );
    for (let i = 0; i < 100 && r.body() !== 'line 1\n'; i++) await new Promise((s) => setTimeout(s, 10));
    assert.equal(r.body(), 'line 1\n');
    file = Buffer.from(line(1) + line(2));
    for (let i = 0; i < 100 && r.body() !== 'line 1\nline 2\n'; i++) await new Promise((s) => setTimeout(s, 10));
    assert.equal(r.body(), 'line 1\nline 2\n');
    // The last line is written as the container exits: it still comes, then the stream ends.
    file = Buffer.from(line(1) + line(2) + line(3));
    current = pod([{ name: 'app', restartCount: 0, state: { terminated: { exitCode: 0 } } }]);
    await done;
    await r.ended;
    assert.equal(r.body(), 'line 1\nline 2\nline 3\n');
  });

  it('ends a follow when the client leaves', async () => {
    const p = pod([{ name: 'app', restartCount: 0, state: { running: {} } }]);
    let reads = 0;
    const read = async (): Promise<ContainerLogsReply> => {
      reads++;
      return { type: 'kubelet.logs.Chunk.v1', data: '', offset: 0, nextOffset: 0, size: 0 };
    };
    const ctl = new AbortController();
    const r = fakeResponse();
    const done = streamPodLog({ read, failure: () => ({ kind: 'Other', message: '' }), currentPod: async () => p, now: Date.now, signal: ctl.signal, pollMs: 10 }, r.res, p, {
      container: 'app',
      follow: true,
      previous: false,
      timestamps: false,
    });
    while (reads < 3) await new Promise((s) => setTimeout(s, 5));
    ctl.abort();
    await done;
    const after = reads;
    await new Promise((s) => setTimeout(s, 50));
    assert.equal(reads, after, 'no reads after the client left');
  });

  it('answers the node failures with the kubelet texts (before the first byte) and an unbound pod with no content (204)', async () => {
    const p = pod([{ name: 'app', restartCount: 0, state: { running: {} } }]);
    const fail = (kind: 'NotFound' | 'NoResponders') => async (): Promise<ContainerLogsReply> => {
      throw Object.assign(new Error(kind), { kind });
    };
    const failure = (e: unknown) => ({ kind: (e as { kind: 'NotFound' | 'NoResponders' }).kind, message: String(e) });
    const deps = { failure, currentPod: async () => p, now: Date.now, signal: new AbortController().signal };
    await assert.rejects(streamPodLog({ ...deps, read: fail('NotFound') }, fakeResponse().res, p, { container: 'app', follow: false, previous: false, timestamps: false }), {
      message: 'container "app" in pod "web" is waiting to start - no logs yet',
    });
    await assert.rejects(
      streamPodLog({ ...deps, read: fail('NoResponders') }, fakeResponse().res, p, { container: 'app', follow: false, previous: false, timestamps: false }),
      (e: unknown) => e instanceof ApiError && e.code === 503,
    );
    const r = fakeResponse();
    await streamPodLog({ ...deps, read: fail('NotFound') }, r.res, pod([], ['app'], ''), { container: 'app', follow: false, previous: false, timestamps: false });
    assert.equal(r.status(), 204);
    assert.equal(r.body(), '');
  });
});
