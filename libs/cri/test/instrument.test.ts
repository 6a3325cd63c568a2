/** instrument(): one CLIENT span per RPC, named by the gRPC full method, and the onCall hook. */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { CriMethods, GrpcRuntimeService, criFullMethodName, criOperationType, instrument, isCriError, type CriCallRecord, type CriMethod } from '../src/index.js';
import { createFakeRuntime, startFakeCri, type FakeCri } from '../src/testing/index.js';

describe('instrument', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('test');
  let cri: FakeCri;
  let client: GrpcRuntimeService;
  let calls: CriCallRecord[];
  let rt: GrpcRuntimeService;

  before(async () => {
    cri = await startFakeCri();
    client = await GrpcRuntimeService.connect({ endpoint: cri.endpoint });
    rt = instrument(client, { tracer, onCall: (c) => calls.push(c) });
  });
  beforeEach(() => {
    exporter.reset();
    calls = [];
  });
  after(async () => {
    rt.close(); // a non-RPC member passes through, bound to the client
    await cri.close();
    await provider.shutdown();
  });

  it('creates a CLIENT span per RPC named by the full gRPC method, with rpc.* attributes', async () => {
    const { podSandboxId } = await rt.RunPodSandbox({ config: { metadata: { name: 'p', namespace: 'n', uid: 'u' } } });
    await rt.PullImage({ image: { image: 'busybox' } });
    assert.match(podSandboxId, /^[0-9a-f]{64}$/);
    const spans = exporter.getFinishedSpans();
    assert.deepEqual(
      spans.map((s) => s.name),
      ['runtime.v1.RuntimeService/RunPodSandbox', 'runtime.v1.ImageService/PullImage'],
    );
    const [run, pull] = spans;
    assert.equal(run?.kind, SpanKind.CLIENT);
    assert.deepEqual(run?.attributes, {
      'rpc.system': 'grpc',
      'rpc.service': 'runtime.v1.RuntimeService',
      'rpc.method': 'RunPodSandbox',
      'rpc.grpc.status_code': 0,
    });
    assert.equal(pull?.attributes['rpc.service'], 'runtime.v1.ImageService');
    assert.equal(run?.status.code, SpanStatusCode.UNSET);
    assert.deepEqual(
      calls.map((c) => [c.service, c.method, c.operation, c.error === undefined]),
      [
        ['RuntimeService', 'RunPodSandbox', 'run_podsandbox', true],
        ['ImageService', 'PullImage', 'pull_image', true],
      ],
    );
    assert.ok(calls.every((c) => c.durationMs >= 0));
  });

  it('records a failure on the span (status ERROR, exception, gRPC code) and in onCall', async () => {
    await assert.rejects(rt.PullImage({ image: { image: 'doesnotexist' } }), (e) => isCriError(e, 'NotFound'));
    const [span] = exporter.getFinishedSpans();
    assert.equal(span?.name, 'runtime.v1.ImageService/PullImage');
    assert.equal(span?.status.code, SpanStatusCode.ERROR);
    assert.match(span?.status.message ?? '', /not found/);
    assert.equal(span?.attributes['rpc.grpc.status_code'], 5);
    assert.equal(span?.events.filter((e) => e.name === 'exception').length, 1);
    assert.equal(calls.length, 1);
    assert.ok(isCriError(calls[0]?.error, 'NotFound'));
  });

  it('spans a server stream until it ends', async () => {
    const abort = new AbortController();
    const stream = rt.GetContainerEvents({}, { signal: abort.signal });
    await stream.established; // members of the stream pass through the wrapper
    assert.equal(exporter.getFinishedSpans().length, 0);
    await rt.RunPodSandbox({ config: { metadata: { name: 'p2', namespace: 'n', uid: 'u2' } } });
    for await (const ev of stream) {
      assert.equal(ev.containerEventType, 'CONTAINER_CREATED_EVENT');
      break;
    }
    const names = exporter.getFinishedSpans().map((s) => s.name);
    assert.deepEqual(names, ['runtime.v1.RuntimeService/RunPodSandbox', 'runtime.v1.RuntimeService/GetContainerEvents']);
    assert.equal(calls.at(-1)?.operation, 'get_container_events');
  });

  it('wraps any implementation, e.g. the fake in-process, and survives a throwing hook', async () => {
    const fake = createFakeRuntime();
    const wrapped = instrument(fake, {
      tracer,
      onCall: () => {
        throw new Error('metrics are down');
      },
    });
    assert.equal((await wrapped.Version({})).runtimeApiVersion, 'v1');
    wrapped.setLatency({ Version: 0 }); // a fake knob, passed through
    await wrapped.close();
    assert.deepEqual(
      exporter.getFinishedSpans().map((s) => s.name),
      ['runtime.v1.RuntimeService/Version'],
    );
  });
});

describe('operation types', () => {
  it("maps every RPC to the kubelet's runtime_operations operation_type label", () => {
    const expected: Record<CriMethod, string> = {
      Version: 'version',
      RunPodSandbox: 'run_podsandbox',
      StopPodSandbox: 'stop_podsandbox',
      RemovePodSandbox: 'remove_podsandbox',
      PodSandboxStatus: 'podsandbox_status',
      ListPodSandbox: 'list_podsandbox',
      CreateContainer: 'create_container',
      StartContainer: 'start_container',
      StopContainer: 'stop_container',
      RemoveContainer: 'remove_container',
      ListContainers: 'list_containers',
      ContainerStatus: 'container_status',
      ExecSync: 'exec_sync',
      Status: 'status',
      GetContainerEvents: 'get_container_events',
      ListImages: 'list_images',
      ImageStatus: 'image_status',
      PullImage: 'pull_image',
      RemoveImage: 'remove_image',
      ImageFsInfo: 'image_fs_info',
    };
    for (const m of Object.keys(CriMethods) as CriMethod[]) assert.equal(criOperationType(m), expected[m], m);
    assert.equal(criFullMethodName('ImageStatus'), 'runtime.v1.ImageService/ImageStatus');
  });
});
