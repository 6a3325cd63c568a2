/**
 * The simulator without a registry (`registry: 'unreachable'`), as services/sim-runtime runs it by
 * default: PullImage fails with containerd 1.6.20's texts for a node whose proxy is a closed loopback
 * port (measured against the project's own containerd), even for an image that is present.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isCriError } from '../src/index.js';
import { createSimRuntime } from '../src/testing/index.js';

describe('sim registry: unreachable', () => {
  const sim = createSimRuntime({ images: ['docker.io/library/busybox:1.36'], registry: 'unreachable' });

  async function pullError(image: string): Promise<{ code: string; details: string }> {
    const e = await sim.PullImage({ image: { image } }).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.ok(isCriError(e), `PullImage(${image}) fails`);
    return { code: e.code, details: e.details };
  }

  it('fails every pull with containerd’s proxyconnect text, also for a present image', async () => {
    assert.deepEqual(await pullError('busybox:1.36'), {
      code: 'Unknown',
      details:
        'failed to pull and unpack image "docker.io/library/busybox:1.36": failed to resolve reference "docker.io/library/busybox:1.36": failed to do request: Head "https://registry-1.docker.io/v2/library/busybox/manifests/1.36": proxyconnect tcp: dial tcp 127.0.0.1:1: connect: connection refused',
    });
    assert.equal((await pullError('quay.io/foo/bar:1')).details,
      'failed to pull and unpack image "quay.io/foo/bar:1": failed to resolve reference "quay.io/foo/bar:1": failed to do request: Head "https://quay.io/v2/foo/bar/manifests/1": proxyconnect tcp: dial tcp 127.0.0.1:1: connect: connection refused');
    const digest = `sha256:${'a'.repeat(64)}`;
    assert.equal((await pullError(`busybox@${digest}`)).details,
      `failed to pull and unpack image "docker.io/library/busybox@${digest}": failed to resolve reference "docker.io/library/busybox@${digest}": failed to do request: Head "https://registry-1.docker.io/v2/library/busybox/manifests/${digest}": proxyconnect tcp: dial tcp 127.0.0.1:1: connect: connection refused`);
  });

  it('reaches loopback registries directly (no proxy)', async () => {
    assert.equal((await pullError('localhost:5000/x:1')).details,
      'failed to pull and unpack image "localhost:5000/x:1": failed to resolve reference "localhost:5000/x:1": failed to do request: Head "http://localhost:5000/v2/x/manifests/1": dial tcp 127.0.0.1:5000: connect: connection refused');
    assert.equal((await pullError('127.0.0.1:1/nosuch:1.0')).details,
      'failed to pull and unpack image "127.0.0.1:1/nosuch:1.0": failed to resolve reference "127.0.0.1:1/nosuch:1.0": failed to do request: Head "http://127.0.0.1:1/v2/nosuch/manifests/1.0": dial tcp 127.0.0.1:1: connect: connection refused');
  });

  it('has only the listed images', async () => {
    assert.notEqual((await sim.ImageStatus({ image: { image: 'busybox:1.36' } })).image, null);
    assert.equal((await sim.ImageStatus({ image: { image: 'busybox:1.37' } })).image, null);
    await sim.close();
  });
});
