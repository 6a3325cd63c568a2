/**
 * The simulator without a registry (`registry: 'unreachable'`), as services/sim-runtime runs it by
 * default: PullImage fails with containerd 1.6.20's texts for a node whose proxy is a closed loopback
 * port (measured against the project's own containerd), even for an image that is present.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isCriError } from '@splitlet/cri';
import { createSimRuntime } from '../src/simulator.js';

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
    assert.equal(
      (await pullError('quay.io/foo/bar:1')).details,
      'failed to pull and unpack image "quay.io/foo/bar:1": failed to resolve reference "quay.io/foo/bar:1": failed to do request: Head "https://quay.io/v2/foo/bar/manifests/1": proxyconnect tcp: dial tcp 127.0.0.1:1: connect: connection refused',
    );
    const digest = `sha256:${'a'.repeat(64)}`;
    assert.equal(
      (await pullError(`busybox@${digest}`)).details,
      `failed to pull and unpack image "docker.io/library/busybox@${digest}": failed to resolve reference "docker.io/library/busybox@${digest}": failed to do request: Head "https://registry-1.docker.io/v2/library/busybox/manifests/${digest}": proxyconnect tcp: dial tcp 127.0.0.1:1: connect: connection refused`,
    );
  });

  it('reaches loopback registries directly (no proxy)', async () => {
    assert.equal(
      (await pullError('localhost:5000/x:1')).details,
      'failed to pull and unpack image "localhost:5000/x:1": failed to resolve reference "localhost:5000/x:1": failed to do request: Head "http://localhost:5000/v2/x/manifests/1": dial tcp 127.0.0.1:5000: connect: connection refused',
    );
    assert.equal(
      (await pullError('127.0.0.1:1/nosuch:1.0')).details,
      'failed to pull and unpack image "127.0.0.1:1/nosuch:1.0": failed to resolve reference "127.0.0.1:1/nosuch:1.0": failed to do request: Head "http://127.0.0.1:1/v2/nosuch/manifests/1.0": dial tcp 127.0.0.1:1: connect: connection refused',
    );
  });

  it('has only the listed images', async () => {
    assert.notEqual((await sim.ImageStatus({ image: { image: 'busybox:1.36' } })).image, null);
    assert.equal((await sim.ImageStatus({ image: { image: 'busybox:1.37' } })).image, null);
    await sim.close();
  });
});

/**
 * A private registry (`privateRegistries`): containerd 1.6.20 answers a 401 from the registry's
 * manifest request with the same text with no credentials and with wrong ones (measured against a
 * registry with Basic auth on 127.0.0.1, see test/integration/registry-auth.test.ts).
 */
describe('sim registry: private', () => {
  const sim = createSimRuntime({
    images: [],
    registry: 'open',
    privateRegistries: [
      { host: '127.0.0.1:5000', pathPrefix: 'private/', username: 'alice', password: 'pw-1' },
      { host: 'docker.io', pathPrefix: 'acme/', username: 'bob', password: 'pw-2' },
    ],
  });
  const unauthorized =
    'failed to pull and unpack image "127.0.0.1:5000/private/busybox:1.0": failed to resolve reference "127.0.0.1:5000/private/busybox:1.0": pulling from host 127.0.0.1:5000 failed with status code [manifests 1.0]: 401 Unauthorized';

  async function pull(image: string, auth?: Record<string, string>): Promise<string> {
    return sim.PullImage({ image: { image }, ...(auth !== undefined ? { auth } : {}) }).then(
      (r) => `ok ${r.imageRef.slice(0, 7)}`,
      (e: unknown) => (isCriError(e) ? `${e.code}: ${e.details}` : String(e)),
    );
  }

  it('answers 401 in containerd’s words without credentials or with wrong ones', async () => {
    assert.equal(await pull('127.0.0.1:5000/private/busybox:1.0'), `Unknown: ${unauthorized}`);
    assert.equal(await pull('127.0.0.1:5000/private/busybox:1.0', { username: 'alice', password: 'wrong' }), `Unknown: ${unauthorized}`);
    const digest = `sha256:${'b'.repeat(64)}`;
    assert.equal(
      await pull(`acme/app@${digest}`),
      `Unknown: failed to pull and unpack image "docker.io/acme/app@${digest}": failed to resolve reference "docker.io/acme/app@${digest}": pulling from host registry-1.docker.io failed with status code [manifests ${digest}]: 401 Unauthorized`,
    );
  });

  it('pulls with the right credentials, given as username/password or as the auth field', async () => {
    assert.match(await pull('127.0.0.1:5000/private/busybox:1.0', { username: 'alice', password: 'pw-1' }), /^ok sha256/);
    assert.match(await pull('127.0.0.1:5000/private/busybox:1.1', { auth: Buffer.from('alice:pw-1').toString('base64') }), /^ok sha256/);
    assert.match(await pull('acme/app:2', { username: 'bob', password: 'pw-2' }), /^ok sha256/);
  });

  it('ignores credentials for another server address, and repositories outside the private prefix need none', async () => {
    assert.equal(
      await pull('127.0.0.1:5000/private/busybox:1.0', { username: 'alice', password: 'pw-1', serverAddress: 'https://other.example:5000' }),
      `Unknown: ${unauthorized}`,
    );
    assert.match(await pull('127.0.0.1:5000/private/busybox:1.2', { username: 'alice', password: 'pw-1', serverAddress: 'http://127.0.0.1:5000' }), /^ok sha256/);
    assert.match(await pull('127.0.0.1:5000/public/busybox:1.0'), /^ok sha256/);
    assert.match(await pull('busybox:1.36'), /^ok sha256/);
  });

  it('still reports a missing image only after the credentials were accepted', async () => {
    assert.match(await pull('127.0.0.1:5000/private/missing:1'), /^Unknown: .*401 Unauthorized$/);
    assert.match(await pull('127.0.0.1:5000/private/missing:1', { username: 'alice', password: 'pw-1' }), /^NotFound: .*not found$/);
    await sim.close();
  });
});
