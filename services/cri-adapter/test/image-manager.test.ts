import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { trace } from '@opentelemetry/api';
import { CriError, type ImageService } from '@splitlet/cri';
import { Backoff, formatGoDuration } from '@splitlet/kube';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import { PullThrottle } from '../src/images/pull-throttle.js';
import { evalPullError, ImageManager, shouldPullImage } from '../src/images/image-manager.js';
import { noopKubeRuntimeMetrics } from '../src/kuberuntime/metrics.js';
import type { PodEvent } from '../src/ports.js';
import { aPod } from './fixtures.js';

const logger = createLogger({ service: 'test', level: 'error' });

describe('shouldPullImage', () => {
  it('follows the pull policy', () => {
    assert.equal(shouldPullImage('Always', true), true);
    assert.equal(shouldPullImage('IfNotPresent', true), false);
    assert.equal(shouldPullImage('IfNotPresent', false), true);
    assert.equal(shouldPullImage('Never', false), false);
  });
});

describe('evalPullError', () => {
  it('maps the runtime message prefix to the kubelet error', () => {
    assert.equal(evalPullError('x', new CriError('Unknown', 'RegistryUnavailable: dial tcp: refused')).error, 'RegistryUnavailable');
    assert.equal(
      evalPullError('x', new CriError('Unknown', 'RegistryUnavailable: dial tcp: refused')).message,
      'image pull failed for x because the registry is unavailable: dial tcp: refused',
    );
    assert.equal(evalPullError('x', new CriError('Unknown', 'SignatureValidationFailed: bad')).error, 'SignatureValidationFailed');
    assert.deepEqual(evalPullError('x', new CriError('NotFound', 'not found')), { error: 'ErrImagePull', message: 'rpc error: code = NotFound desc = not found' });
  });
});

describe('Go duration format of backoff messages', () => {
  for (const [ms, text] of [
    [10_000, '10s'],
    [20_000, '20s'],
    [80_000, '1m20s'],
    [160_000, '2m40s'],
    [300_000, '5m0s'],
    [523, '523ms'],
    [1234, '1.234s'],
  ] as const) {
    it(`${ms} ms → ${text}`, () => assert.equal(formatGoDuration(ms), text));
  }
});

describe('ImageManager', () => {
  function fakeImages(pullMs: number): { images: Pick<ImageService, 'ImageStatus' | 'PullImage'>; pulls: string[]; concurrent: () => number } {
    const pulls: string[] = [];
    let active = 0;
    let maxActive = 0;
    return {
      pulls,
      concurrent: () => maxActive,
      images: {
        ImageStatus: async (req) => {
          const id = req.image?.image ?? '';
          return {
            image: id.startsWith('sha256:') ? { id, repoTags: [], repoDigests: [], size: '4096', uid: null, username: '', spec: null, pinned: false } : null,
            info: {},
          };
        },
        PullImage: async (req) => {
          active++;
          maxActive = Math.max(maxActive, active);
          pulls.push(req.image?.image ?? '');
          await new Promise((r) => setTimeout(r, pullMs));
          active--;
          return { imageRef: `sha256:${pulls.length}` };
        },
      },
    };
  }

  const make = (images: Pick<ImageService, 'ImageStatus' | 'PullImage'>, serializePulls: boolean, events: PodEvent[]) => {
    const clock = new FakeClock(0);
    return new ImageManager({
      images,
      recorder: { record: (e) => events.push(e) },
      clock,
      backoff: new Backoff({ initialMs: 10_000, maxMs: 300_000, clock }),
      serializePulls,
      metrics: noopKubeRuntimeMetrics,
      logger,
      tracer: trace.getTracer('t'),
    });
  };
  const request = (image: string) => {
    const pod = aPod({ containers: [{ name: 'c', image, imagePullPolicy: 'IfNotPresent' }] });
    return {
      pod,
      podRef: { name: 'web', namespace: 'default', uid: 'uid-web' },
      container: pod.spec.containers[0]!,
      fieldPath: 'spec.containers{c}',
      pullSecrets: [],
      sandboxConfig: {},
    };
  };

  it('serializes pulls by default and reports waiting time', async () => {
    const fake = fakeImages(30);
    const events: PodEvent[] = [];
    const m = make(fake.images, true, events);
    const results = await Promise.all([m.ensureImageExists(request('a:1')), m.ensureImageExists(request('b:1')), m.ensureImageExists(request('c:1'))]);
    assert.ok(results.every((r) => r.ok));
    assert.equal(fake.concurrent(), 1);
    assert.deepEqual(fake.pulls, ['a:1', 'b:1', 'c:1']);
    const pulled = events.filter((e) => e.reason === 'Pulled').map((e) => e.message);
    assert.equal(pulled.length, 3);
    // Go's time.Duration text: "311ms", or "1.124s" once a loaded machine makes the wait pass a second.
    const goDuration = String.raw`(?:\d+ms|\d+(?:\.\d+)?s)`;
    const text = new RegExp(String.raw`^Successfully pulled image "[abc]:1" in ${goDuration} \(${goDuration} including waiting\)\. Image size: 4096 bytes\.$`);
    for (const msg of pulled) assert.match(msg, text);
  });

  it('pulls in parallel when not serialized', async () => {
    const fake = fakeImages(30);
    const m = make(fake.images, false, []);
    await Promise.all([m.ensureImageExists(request('a:1')), m.ensureImageExists(request('b:1'))]);
    assert.equal(fake.concurrent(), 2);
  });

  it('a failing ImageStatus is ImageInspectError', async () => {
    const events: PodEvent[] = [];
    const m = make({ ImageStatus: async () => Promise.reject(new CriError('Unavailable', 'down')), PullImage: async () => ({ imageRef: '' }) }, true, events);
    const r = await m.ensureImageExists(request('a:1'));
    assert.deepEqual(r, { ok: false, error: 'ImageInspectError', message: 'Failed to inspect image "a:1": rpc error: code = Unavailable desc = down' });
    assert.equal(events[0]?.reason, 'InspectFailed');
  });

  it('over registryPullQPS/registryBurst a pull fails at once with "pull QPS exceeded" (ErrImagePull, backoff), without calling the runtime', async () => {
    const fake = fakeImages(1);
    const events: PodEvent[] = [];
    const clock = new FakeClock(0);
    const m = new ImageManager({
      images: fake.images,
      recorder: { record: (e) => events.push(e) },
      clock,
      backoff: new Backoff({ initialMs: 10_000, maxMs: 300_000, clock }),
      throttle: new PullThrottle(1, 2, clock),
      metrics: noopKubeRuntimeMetrics,
      logger,
      tracer: trace.getTracer('t'),
    });
    assert.ok((await m.ensureImageExists(request('a:1'))).ok);
    assert.ok((await m.ensureImageExists(request('b:1'))).ok);
    const third = await m.ensureImageExists(request('c:1'));
    assert.deepEqual(third, { ok: false, error: 'ErrImagePull', message: 'pull QPS exceeded' });
    assert.deepEqual(fake.pulls, ['a:1', 'b:1'], 'the throttled pull never reached the runtime');
    assert.equal(events.at(-1)?.reason, 'Failed');
    assert.equal(events.at(-1)?.message, 'Failed to pull image "c:1": pull QPS exceeded');
    clock.advance(1000);
    assert.ok((await m.ensureImageExists(request('d:1'))).ok, 'a token again after 1 s at 1 qps');
  });
});
