/**
 * Image pulls with credentials: the keyring order (pod pull secrets, then the node's docker config),
 * the kubelet's try-each-credential loop, pull secret resolution with the FailedToRetrieveImagePullSecret
 * event, the node keyring's search paths and cache — and that a password reaches only the
 * PullImageRequest: no log line, span, event or error carries it.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CriError, instrument, type AuthConfig, type CriInput, type ImageService } from '@splitlet/cri';
import { createFakeRuntime } from '@splitlet/cri/testing';
import { Backoff } from '@splitlet/kube';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import { createTestTracing } from '@splitlet/telemetry/testing';
import { createStandalonePullSecretSource } from '../src/adapters/standalone-pull-secrets.js';
import { readDockerConfigJson } from '../src/credentials/docker-config.js';
import { BasicDockerKeyring } from '../src/credentials/keyring.js';
import { createNodeKeyringProvider, dockercfgPaths, dockerConfigJsonPaths, readDockerConfigFile, type NodeKeyringProvider } from '../src/credentials/node-keyring.js';
import { createPullSecretResolver, failedToRetrievePullSecretsMessage } from '../src/credentials/pull-secrets.js';
import { aggregatePullErrors, ImageManager } from '../src/images/image-manager.js';
import { noopKubeRuntimeMetrics } from '../src/kuberuntime/metrics.js';
import type { PodEvent, PullSecret } from '../src/ports.js';
import { aPod } from './fixtures.js';

const PASSWORD = 'pw-7f3c1e-must-never-leak';
const REGISTRY = '127.0.0.1:5000';
const IMAGE = `${REGISTRY}/private/busybox:1.0`;
const UNAUTHORIZED = `rpc error: code = Unknown desc = failed to pull and unpack image "${IMAGE}": failed to resolve reference "${IMAGE}": pulling from host ${REGISTRY} failed with status code [manifests 1.0]: 401 Unauthorized`;

function staticKeyring(auths: Record<string, { username: string; password: string }>, source = 'file /node/config.json'): NodeKeyringProvider {
  const k = new BasicDockerKeyring();
  k.add(readDockerConfigJson(JSON.stringify({ auths })), source);
  return { keyring: async () => k };
}

function dockerSecret(name: string, auths: Record<string, { username: string; password: string }>): PullSecret {
  return { namespace: 'default', name, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': JSON.stringify({ auths }) } };
}

/** The image manager over the simulator (behind the real CRI instrumentation), capturing logs, spans and events. */
function setup(nodeKeyring: NodeKeyringProvider | undefined) {
  // A registry with Basic auth on `private/`: a pull without alice's password gets containerd's 401 text.
  const sim = createFakeRuntime({
    images: [],
    onPull: (image, auth) => {
      if (image.startsWith(`${REGISTRY}/private/`) && (auth?.username !== 'alice' || auth.password !== PASSWORD))
        throw new CriError(
          'Unknown',
          UNAUTHORIZED.replace(/^rpc error: code = Unknown desc = /, '')
            .replaceAll(IMAGE, image)
            .replace('[manifests 1.0]', `[manifests ${image.split(':').pop() ?? ''}]`),
        );
    },
  });
  const auths: (CriInput<AuthConfig> | null | undefined)[] = [];
  const recording: ImageService = new Proxy(sim, {
    get(target, prop, receiver) {
      if (prop === 'PullImage') return (req: Parameters<ImageService['PullImage']>[0]) => (auths.push(req.auth), sim.PullImage(req));
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const tracing = createTestTracing();
  const lines: string[] = [];
  const logger = createLogger({ service: 'test', level: 'debug', stream: { write: (l: string) => lines.push(l) } });
  const events: PodEvent[] = [];
  const clock = new FakeClock(0);
  const images = instrument(recording, { tracer: tracing.tracer });
  const manager = new ImageManager({
    images,
    ...(nodeKeyring !== undefined ? { nodeKeyring } : {}),
    recorder: { record: (e) => events.push(e) },
    clock,
    backoff: new Backoff({ initialMs: 10_000, maxMs: 300_000, clock }),
    metrics: noopKubeRuntimeMetrics,
    logger,
    tracer: tracing.tracer,
  });
  const ensure = (pullSecrets: PullSecret[] = [], image = IMAGE) => {
    const pod = aPod({ containers: [{ name: 'c', image, imagePullPolicy: 'Always' }] });
    return manager.ensureImageExists({
      pod,
      podRef: { name: 'web', namespace: 'default', uid: 'uid-web' },
      container: pod.spec.containers[0]!,
      fieldPath: 'spec.containers{c}',
      pullSecrets,
      sandboxConfig: {},
    });
  };
  /** Everything observable except the CRI request: log lines, span names/attributes/events/status, events. */
  const observable = (): string =>
    JSON.stringify({
      lines,
      spans: tracing.spans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })),
      events,
    });
  return {
    sim,
    auths,
    ensure,
    events,
    lines,
    observable,
    clock,
    close: async () => {
      await sim.close();
      await tracing.shutdown();
    },
  };
}

describe('ImageManager with credentials', () => {
  it('pulls anonymously when no credential matches the image', async () => {
    const t = setup(staticKeyring({ 'quay.io': { username: 'x', password: PASSWORD } }));
    const r = await t.ensure([], 'busybox:1.36');
    assert.equal(r.ok, true);
    assert.deepEqual(t.auths, [undefined]);
    await t.close();
  });

  it('pulls a private image with the node’s docker config credentials', async () => {
    const t = setup(staticKeyring({ [`http://${REGISTRY}`]: { username: 'alice', password: PASSWORD } }));
    const r = await t.ensure();
    assert.equal(r.ok, true);
    assert.deepEqual(t.auths, [{ username: 'alice', password: PASSWORD, identityToken: '', registryToken: '' }]);
    assert.deepEqual(
      t.events.map((e) => e.reason),
      ['Pulling', 'Pulled'],
    );
    assert.ok(!t.observable().includes(PASSWORD), 'the password appears in no log line, span or event');
    await t.close();
  });

  it('tries the pod’s pull secrets before the node’s credentials, each in turn until one works', async () => {
    const t = setup(staticKeyring({ [REGISTRY]: { username: 'alice', password: PASSWORD } }));
    const r = await t.ensure([
      dockerSecret('stale', { [`${REGISTRY}/private`]: { username: 'alice', password: 'old-password' } }),
      dockerSecret('other', { 'quay.io': { username: 'q', password: 'q' } }),
    ]);
    assert.equal(r.ok, true);
    assert.deepEqual(
      t.auths.map((a) => a?.password),
      ['old-password', PASSWORD],
    );
    assert.deepEqual(
      t.events.map((e) => e.reason),
      ['Pulling', 'Pulled'],
    );
    await t.close();
  });

  it('when every credential fails: Failed with the runtime’s 401 text, ErrImagePull, then ImagePullBackOff', async () => {
    const t = setup(staticKeyring({ [REGISTRY]: { username: 'alice', password: 'wrong-1' } }));
    const r = await t.ensure([dockerSecret('regcred', { [REGISTRY]: { username: 'alice', password: 'wrong-2' } })]);
    assert.deepEqual(r, { ok: false, error: 'ErrImagePull', message: UNAUTHORIZED });
    assert.deepEqual(
      t.auths.map((a) => a?.password),
      ['wrong-2', 'wrong-1'],
    );
    assert.deepEqual(
      t.events.map((e) => `${e.eventType} ${e.reason}: ${e.message}`),
      [`Normal Pulling: Pulling image "${IMAGE}"`, `Warning Failed: Failed to pull image "${IMAGE}": ${UNAUTHORIZED}`],
    );
    const again = await t.ensure();
    assert.equal(again.ok ? 'ok' : again.error, 'ImagePullBackOff');
    assert.equal(t.auths.length, 2, 'no pull during the backoff');
    await t.close();
  });

  it('without any credentials the private registry answers 401 (anonymous pull)', async () => {
    const t = setup(undefined);
    const r = await t.ensure();
    assert.deepEqual(r, { ok: false, error: 'ErrImagePull', message: UNAUTHORIZED });
    assert.deepEqual(t.auths, [undefined]);
    await t.close();
  });

  it('a pull secret that is not a valid docker config fails the pull with ErrImagePull naming the secret', async () => {
    const t = setup(undefined);
    const broken: PullSecret = {
      namespace: 'default',
      name: 'broken',
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': `{"auths": {"${REGISTRY}": {"password": "${PASSWORD}"` },
    };
    const r = await t.ensure([broken]);
    assert.deepEqual(r, { ok: false, error: 'ErrImagePull', message: 'the .dockerconfigjson of secret default/broken is not valid JSON' });
    assert.equal(t.auths.length, 0);
    assert.ok(!t.observable().includes(PASSWORD));
    await t.close();
  });

  it('never puts a password in a log line, span or event, through success, failure and backoff (debug logging on)', async () => {
    const t = setup(staticKeyring({ [REGISTRY]: { username: 'alice', password: `${PASSWORD}-wrong` } }));
    await t.ensure([dockerSecret('regcred', { [REGISTRY]: { username: 'alice', password: PASSWORD } })]);
    await t.ensure([dockerSecret('regcred', { [REGISTRY]: { username: 'alice', password: `${PASSWORD}-x` } })], `${REGISTRY}/private/busybox:2.0`);
    await t.ensure([], `${REGISTRY}/private/busybox:2.0`);
    assert.ok(
      t.auths.some((a) => a?.password === PASSWORD),
      'the password did reach the CRI request',
    );
    assert.ok(
      t.lines.some((l) => l.includes('Pulling image with credentials')),
      'debug logging was on',
    );
    assert.ok(t.observable().includes('PullImage'), 'CRI spans were recorded');
    assert.ok(!t.observable().includes(PASSWORD), 'no log line, span or event holds the password');
    await t.close();
  });
});

describe('aggregatePullErrors (utilerrors.NewAggregate)', () => {
  it('is the error itself for one distinct message, else [m1, m2]', () => {
    const a = new CriError('Unknown', 'x');
    assert.equal(aggregatePullErrors([a]), a);
    assert.equal(aggregatePullErrors([a, new CriError('Unknown', 'x')]), a);
    assert.equal((aggregatePullErrors([a, new CriError('Unknown', 'y')]) as Error).message, '[rpc error: code = Unknown desc = x, rpc error: code = Unknown desc = y]');
  });
});

describe('getPullSecretsForPod', () => {
  const pod = aPod({ name: 'web', namespace: 'shop' });

  it('standalone: no secret is found; each is logged, one FailedToRetrieveImagePullSecret event names them all', async () => {
    const lines: string[] = [];
    const events: PodEvent[] = [];
    const resolver = createPullSecretResolver({
      source: createStandalonePullSecretSource(),
      recorder: { record: (e) => events.push(e) },
      logger: createLogger({ service: 'test', level: 'info', stream: { write: (l: string) => lines.push(l) } }),
    });
    assert.deepEqual(await resolver.getPullSecretsForPod(pod, ['regcred', '', 'other']), []);
    assert.deepEqual(
      events.map((e) => ({ type: e.eventType, reason: e.reason, message: e.message, fieldPath: e.fieldPath })),
      [
        {
          type: 'Warning',
          reason: 'FailedToRetrieveImagePullSecret',
          message: 'Unable to retrieve some image pull secrets (regcred, other); attempting to pull the image may not succeed.',
          fieldPath: undefined,
        },
      ],
    );
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      logged.map((l) => [l['msg'], l['pod'], l['imagePullRef']]),
      [
        ['Unable to retrieve pull secret, the image pull may not succeed.', 'shop/web', 'shop/regcred'],
        ['Unable to retrieve pull secret, the image pull may not succeed.', 'shop/web', 'shop/other'],
      ],
    );
    assert.match(JSON.stringify(logged[0]?.['err']), /secret \\"shop\/regcred\\" not found: standalone mode has no API server/);
  });

  it('a source that has the secrets (cluster mode) returns them in order, without an event', async () => {
    const events: PodEvent[] = [];
    const have = new Map([
      ['shop/a', dockerSecret('a', {})],
      ['shop/b', dockerSecret('b', {})],
    ]);
    const resolver = createPullSecretResolver({
      source: { getSecret: async (ns, name) => have.get(`${ns}/${name}`) ?? Promise.reject(new Error('nope')) },
      recorder: { record: (e) => events.push(e) },
      logger: createLogger({ service: 'test', level: 'error' }),
    });
    assert.deepEqual(
      (await resolver.getPullSecretsForPod(pod, ['b', 'a'])).map((s) => s.name),
      ['b', 'a'],
    );
    assert.deepEqual(events, []);
    assert.deepEqual(
      (await resolver.getPullSecretsForPod(pod, ['a', 'gone'])).map((s) => s.name),
      ['a'],
    );
    assert.equal((events as PodEvent[])[0]?.message, failedToRetrievePullSecretsMessage(['gone']));
  });
});

describe('node keyring', () => {
  const dir = mkdtempSync(join(tmpdir(), 'node-keyring-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const paths = { rootDir: join(dir, 'root'), workingDir: join(dir, 'cwd'), homeDir: join(dir, 'home') };
  const logger = createLogger({ service: 'test', level: 'error' });
  const write = (path: string, auths: Record<string, { username: string; password: string }> | string, legacy = false): void => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, typeof auths === 'string' ? auths : JSON.stringify(legacy ? auths : { auths }));
  };

  it('searches the kubelet’s paths in order', () => {
    assert.deepEqual(dockerConfigJsonPaths(paths), [
      join(paths.rootDir, 'config.json'),
      join(paths.workingDir, 'config.json'),
      join(paths.homeDir, '.docker', 'config.json'),
      '/.docker/config.json',
    ]);
    assert.deepEqual(dockercfgPaths(paths), [join(paths.rootDir, '.dockercfg'), join(paths.workingDir, '.dockercfg'), join(paths.homeDir, '.dockercfg'), '/.dockercfg']);
  });

  it('takes the first valid config.json (an invalid one is skipped), and .dockercfg only when there is no config.json', async () => {
    assert.equal(await readDockerConfigFile(paths, logger), undefined);
    write(join(paths.homeDir, '.dockercfg'), { 'legacy.io': { username: 'l', password: 'p' } }, true);
    assert.equal((await readDockerConfigFile(paths, logger))?.path, join(paths.homeDir, '.dockercfg'));
    write(join(paths.homeDir, '.docker', 'config.json'), { 'home.io': { username: 'h', password: 'p' } });
    assert.equal((await readDockerConfigFile(paths, logger))?.path, join(paths.homeDir, '.docker', 'config.json'));
    write(join(paths.workingDir, 'config.json'), '{"auths": {"broken.io": {"password": "x"');
    const warnings: string[] = [];
    const warnLogger = createLogger({ service: 'test', level: 'warn', stream: { write: (l: string) => warnings.push(l) } });
    assert.equal((await readDockerConfigFile(paths, warnLogger))?.path, join(paths.homeDir, '.docker', 'config.json'));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /ignoring an invalid docker config file/);
    assert.ok(!(warnings[0] ?? '').includes('broken.io'), 'the warning does not quote the file');
    write(join(paths.rootDir, 'config.json'), { 'root.io': { username: 'r', password: 'p' } });
    const found = await readDockerConfigFile(paths, logger);
    assert.equal(found?.path, join(paths.rootDir, 'config.json'));
    assert.deepEqual([...(found?.config.keys() ?? [])], ['root.io']);
  });

  it('re-reads the file only after 5 minutes (the kubelet’s caching provider)', async () => {
    const cacheDir = mkdtempSync(join(dir, 'cache-'));
    const clock = new FakeClock(0);
    let reads = 0;
    const provider = createNodeKeyringProvider({
      paths: { rootDir: cacheDir, workingDir: cacheDir, homeDir: cacheDir },
      clock,
      logger,
      readText: async (p) => {
        reads++;
        const { readFile } = await import('node:fs/promises');
        return readFile(p, 'utf8');
      },
    });
    write(join(cacheDir, 'config.json'), { 'a.io': { username: 'first', password: 'p' } });
    assert.deepEqual(
      (await provider.keyring()).lookup('a.io/x').map((c) => `${c.username} ${c.source}`),
      [`first file ${join(cacheDir, 'config.json')}`],
    );
    const readsAfterFirst = reads;
    write(join(cacheDir, 'config.json'), { 'a.io': { username: 'second', password: 'p' } });
    clock.advance(299_999);
    assert.equal((await provider.keyring()).lookup('a.io/x')[0]?.username, 'first');
    assert.equal(reads, readsAfterFirst);
    clock.advance(1);
    assert.equal((await provider.keyring()).lookup('a.io/x')[0]?.username, 'second');
  });
});
