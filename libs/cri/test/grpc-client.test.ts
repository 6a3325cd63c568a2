/** GrpcRuntimeService and serveCri specifics: connecting, deadlines, cancellation, error mapping, the proto. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as protoLoader from '@grpc/proto-loader';
import { CRI_PROTO_PATH, CriError, GrpcRuntimeService, isCriError, serveCri, type ImageService, type RuntimeService } from '../src/index.js';
import { createFakeRuntime, startFakeCri, type FakeCri } from '../src/testing/index.js';

describe('GrpcRuntimeService', () => {
  let cri: FakeCri;
  let client: GrpcRuntimeService;

  before(async () => {
    cri = await startFakeCri();
    client = await GrpcRuntimeService.connect({ endpoint: cri.endpoint });
  });
  after(async () => {
    client.close();
    await cri.close();
  });

  it('fails a call past its deadline with DeadlineExceeded (retryable)', async () => {
    cri.fake.setLatency({ ListPodSandbox: 2000 });
    try {
      await assert.rejects(client.ListPodSandbox({}, { deadlineMs: 50 }), (e: unknown) => {
        assert.ok(isCriError(e, 'DeadlineExceeded'), String(e));
        assert.equal(e.retryable, true);
        assert.equal(e.method, 'ListPodSandbox');
        assert.match((e as Error).message, /^rpc error: code = DeadlineExceeded desc = /);
        return true;
      });
    } finally {
      cri.fake.setLatency({ ListPodSandbox: 0 });
    }
  });

  it('applies the client default timeout when a call gives none', async () => {
    const short = await GrpcRuntimeService.connect({ endpoint: cri.endpoint, timeoutMs: 50 });
    cri.fake.setLatency({ ImageFsInfo: 2000 });
    try {
      await assert.rejects(short.ImageFsInfo({}), (e) => isCriError(e, 'DeadlineExceeded'));
    } finally {
      cri.fake.setLatency({ ImageFsInfo: 0 });
      short.close();
    }
  });

  it('cancels a call when its signal aborts (Canceled)', async () => {
    cri.fake.setLatency({ Status: 2000 });
    const abort = new AbortController();
    const call = client.Status({}, { signal: abort.signal });
    abort.abort();
    try {
      await assert.rejects(call, (e) => isCriError(e, 'Canceled'));
      await assert.rejects(client.Status({}, { signal: abort.signal }), (e) => isCriError(e, 'Canceled'));
    } finally {
      cri.fake.setLatency({ Status: 0 });
    }
  });

  it('carries injected error codes and messages through gRPC', async () => {
    cri.fake.injectFailure('RunPodSandbox', { code: 'FailedPrecondition', message: 'no CNI config', times: 1 });
    await assert.rejects(client.RunPodSandbox({ config: { metadata: { name: 'a', namespace: 'b', uid: 'c' } } }), (e: unknown) => {
      assert.ok(isCriError(e, 'FailedPrecondition'));
      assert.equal(e.details, 'no CNI config');
      assert.equal(e.retryable, false);
      return true;
    });
  });

  it('ends an event stream when its signal aborts, and when the consumer breaks', async () => {
    const abort = new AbortController();
    const stream = client.GetContainerEvents({}, { signal: abort.signal });
    await stream.established;
    abort.abort();
    const seen = [];
    for await (const ev of stream) seen.push(ev);
    assert.deepEqual(seen, []);

    const second = client.GetContainerEvents({});
    await second.established;
    const { podSandboxId } = await client.RunPodSandbox({ config: { metadata: { name: 'evt', namespace: 'ns', uid: 'u-evt' } } });
    for await (const ev of second) {
      assert.equal(ev.containerId, podSandboxId);
      break;
    }
  });

  it('fails every call after close with Unavailable', async () => {
    const other = await GrpcRuntimeService.connect({ endpoint: cri.endpoint });
    other.close();
    other.close();
    await assert.rejects(other.Version({}), (e) => isCriError(e, 'Unavailable'));
    const stream = other.GetContainerEvents({});
    await assert.rejects(stream.established, (e) => isCriError(e, 'Unavailable'));
  });
});

describe('GrpcRuntimeService.connect', () => {
  it('fails with Unavailable naming the endpoint when nothing listens', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cri-none-'));
    const endpoint = `unix://${dir}/nothing.sock`;
    try {
      await assert.rejects(GrpcRuntimeService.connect({ endpoint, connectTimeoutMs: 200 }), (e: unknown) => {
        assert.ok(isCriError(e, 'Unavailable'));
        assert.ok((e as Error).message.includes(endpoint), (e as Error).message);
        assert.match((e as Error).message, /does not exist/);
        return true;
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('accepts a bare socket path', async () => {
    const cri = await startFakeCri();
    try {
      const c = await GrpcRuntimeService.connect({ endpoint: cri.server.socketPath });
      assert.equal((await c.Version({})).runtimeApiVersion, 'v1');
      c.close();
    } finally {
      await cri.close();
    }
  });
});

describe('serveCri', () => {
  it('maps plain errors to Unknown, refuses a non-socket path, removes its socket on close', async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cri-serve-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const socketPath = path.join(dir, 'cri.sock');
    const fake = createFakeRuntime();
    const overrides: Record<string, unknown> = {
      Version: async () => Promise.reject(new TypeError('boom')),
      Status: () => {
        throw new CriError('Unimplemented', 'not here');
      },
    };
    const broken = new Proxy(fake, {
      get: (target, prop) => (typeof prop === 'string' && prop in overrides ? overrides[prop] : (Reflect.get(target, prop) as () => unknown).bind(target)),
    }) as RuntimeService & ImageService;
    const server = await serveCri(broken, socketPath);
    const c = await GrpcRuntimeService.connect({ endpoint: server.endpoint });
    try {
      await assert.rejects(c.Version({}), (e) => isCriError(e, 'Unknown') && e.details === 'boom');
      await assert.rejects(c.Status({}), (e) => isCriError(e, 'Unimplemented'));
      assert.equal((await c.ListImages({})).images.length, 0);
    } finally {
      c.close();
      await server.close();
      await fake.close();
    }
    assert.throws(() => rmSync(socketPath), /ENOENT/);
    const file = path.join(dir, 'plain-file');
    writeFileSync(file, '');
    await assert.rejects(serveCri(fake, file), /not a socket/);
  });

  it("aborts a handler's signal when its client cancels, never after it answered", async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cri-serve-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const fake = createFakeRuntime();
    const answered: AbortSignal[] = [];
    let running: AbortSignal | undefined;
    const overrides: Record<string, unknown> = {
      Version: async (_req: unknown, o?: { signal?: AbortSignal }) => {
        answered.push(o!.signal!);
        return fake.Version({});
      },
      Status: (_req: unknown, o?: { signal?: AbortSignal }) => {
        running = o!.signal!;
        return new Promise((_resolve, reject) => running!.addEventListener('abort', () => reject(new CriError('Canceled', 'cancelled')), { once: true }));
      },
    };
    const impl = new Proxy(fake, {
      get: (target, prop) => (typeof prop === 'string' && prop in overrides ? overrides[prop] : (Reflect.get(target, prop) as () => unknown).bind(target)),
    }) as RuntimeService & ImageService;
    const server = await serveCri(impl, path.join(dir, 'cri.sock'));
    const c = await GrpcRuntimeService.connect({ endpoint: server.endpoint });
    try {
      for (let i = 0; i < 5; i++) await c.Version({});
      const abort = new AbortController();
      const call = c.Status({}, { signal: abort.signal });
      const deadline = Date.now() + 30_000;
      while (running === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assert.ok(running, 'Status reached the server');
      abort.abort();
      await assert.rejects(call, (e) => isCriError(e, 'Canceled'));
      while (!running.aborted && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assert.equal(running.aborted, true, "the running handler's signal aborted");
      // Every stream of the answered calls has closed by now (the cancelled call came after them).
      assert.deepEqual(
        answered.map((s) => s.aborted),
        [false, false, false, false, false],
      );
    } finally {
      c.close();
      await server.close();
      await fake.close();
    }
    assert.deepEqual(
      answered.map((s) => s.aborted),
      [false, false, false, false, false],
      'closing the channel and the server aborts no answered call',
    );
  });
});

describe('proto subset', () => {
  it('keeps the upstream CRI names and field numbers', () => {
    const def = protoLoader.loadSync(CRI_PROTO_PATH, { keepCase: true });
    const fields = (message: string): Record<string, number> => {
      const type = def[`runtime.v1.${message}`] as { type: { field: { name: string; number: number }[] } };
      return Object.fromEntries(type.type.field.map((f) => [f.name, f.number]));
    };
    // Spot checks against kubernetes/cri-api pkg/apis/runtime/v1/api.proto.
    assert.deepEqual(fields('PodSandboxConfig'), {
      metadata: 1,
      hostname: 2,
      log_directory: 3,
      dns_config: 4,
      port_mappings: 5,
      labels: 6,
      annotations: 7,
      linux: 8,
    });
    assert.equal(fields('ContainerConfig')['linux'], 15);
    assert.equal(fields('ContainerConfig')['log_path'], 11);
    assert.deepEqual([fields('ContainerStatus')['log_path'], fields('ContainerStatus')['image_id'], fields('ContainerStatus')['reason']], [15, 17, 10]);
    assert.equal(fields('ImageSpec')['user_specified_image'], 18);
    assert.equal(fields('LinuxSandboxSecurityContext')['run_as_group'], 8);
    assert.equal(fields('LinuxContainerSecurityContext')['run_as_group'], 12);
    assert.equal(fields('LinuxContainerSecurityContext')['no_new_privs'], 11);
    assert.equal(fields('Mount')['recursive_read_only'], 8);
    assert.equal(fields('PodSandboxStatusResponse')['timestamp'], 4);
    assert.equal(fields('ContainerEventResponse')['containers_statuses'], 5);
    const runtime = def['runtime.v1.RuntimeService'] as Record<string, { path: string; responseStream: boolean }>;
    assert.equal(runtime['RunPodSandbox']?.path, '/runtime.v1.RuntimeService/RunPodSandbox');
    assert.equal(runtime['GetContainerEvents']?.responseStream, true);
    const image = def['runtime.v1.ImageService'] as Record<string, { path: string }>;
    assert.equal(image['ImageFsInfo']?.path, '/runtime.v1.ImageService/ImageFsInfo');
  });
});
