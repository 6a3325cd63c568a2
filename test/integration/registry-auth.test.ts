/**
 * Image pull credentials against real containerd and a real registry: a read-only OCI distribution
 * registry (oci-registry.ts) on 127.0.0.1 with HTTP Basic auth serves the busybox image the project
 * builds; `splitlet up --runtime containerd` pulls from it over plain HTTP (a hosts.toml in the
 * containerd's registry config_path), with the node's `<root dir>/config.json` holding credentials
 * per repository path:
 *
 *   <registry>/private → the right password   → pod reg-ok:    Pulling, Pulled, Created, Started, Running
 *   <registry>/wrong   → a wrong password     → pod reg-wrong: ErrImagePull → ImagePullBackOff (401 from containerd)
 *   (nothing for anon)                        → pod reg-anon:  anonymous pull, 401 → ImagePullBackOff, and since it
 *                                                 names a pull secret standalone mode cannot retrieve:
 *                                                 FailedToRetrieveImagePullSecret
 *
 * Then the password must appear nowhere but in the node's config.json: not in any process log, the
 * supervisor's output, the NATS store (every stream and KV bucket: events, spans, statuses), nor in
 * the spans on the bus.
 *
 * Skipped, with the reason printed, when not root, when containerd, runc, the CNI plugins, iproute2 or
 * busybox-static are missing, or when RUN_CONTAINERD_TESTS=0.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Subjects, type SpanRecord } from '@splitlet/api';
import type { KubeEvent } from '@splitlet/api';
import { containerdPaths } from '../../libs/node-setup/src/index.ts';
import { busyboxLayer, MediaTypes, ociImage } from '../../libs/node-setup/src/oci-image.ts';
import { connectCliBus } from '../../services/cli/src/target.ts';
import type { InstanceInfo } from '../../services/cli/src/state-dir.ts';
import { NodeObserver } from './contract/node-observer.ts';
import { containerdSkipReason, startSplitlet, stopSplitlet, waitFor } from './harness.ts';
import type { Instance } from './harness.ts';
import { startOciRegistry } from './oci-registry.ts';
import type { OciRegistry } from './oci-registry.ts';

const NODE = 'registry-node';
const USER = 'alice';
const PASSWORD = `pw-${process.pid}-c0rrect-h0rse`;
const WRONG_PASSWORD = `pw-${process.pid}-wr0ng`;

const skip = containerdSkipReason();
if (skip !== undefined) console.log(`# registry auth on containerd skipped: ${skip}`);

/** Every file under `dir` (recursively), but not those `exclude` names (relative paths or folder prefixes). */
function filesUnder(dir: string, exclude: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const rel = relative(dir, p);
      if (exclude.some((x) => rel === x || rel.startsWith(`${x}/`))) continue;
      const st = statSync(p, { throwIfNoEntry: false });
      if (st?.isDirectory()) walk(p);
      else if (st?.isFile()) out.push(p);
    }
  };
  walk(dir);
  return out;
}

describe('image pull credentials on containerd', { skip: skip ?? false, timeout: 240_000 }, () => {
  let stateDir: string | undefined;
  let home: string | undefined;
  let s: Instance;
  let registry: OciRegistry;
  let obs: NodeObserver;
  let manifests: string;
  let appliedAt = 0;
  const image = (repo: string): string => `${registry.host}/${repo}/busybox:1.0`;

  before(async () => {
    // The image the project builds for its containerd, served from the test registry under three names.
    const layer = busyboxLayer('/bin/busybox');
    const img = ociImage({ key: 'registry-busybox', names: ['busybox'], cmd: ['sh'] }, layer, gzipSync(layer, { level: 6 }));
    const manifest = img.blobs.get(img.manifestDigest);
    assert.ok(manifest !== undefined);
    registry = await startOciRegistry({
      users: [{ username: USER, password: PASSWORD }],
      images: ['private', 'wrong', 'anon'].map((repo) => ({ name: `${repo}/busybox`, tags: ['1.0'], manifest, manifestMediaType: MediaTypes.manifest, blobs: img.blobs })),
    });

    stateDir = mkdtempSync(join(tmpdir(), 'splitlet-registry-'));
    home = mkdtempSync(join(tmpdir(), 'splitlet-registry-home-'));
    // The node's credentials, in the kubelet root dir (the first place the kubelet looks).
    const kubeletRoot = join(stateDir, 'kubelet');
    mkdirSync(kubeletRoot, { recursive: true });
    writeFileSync(
      join(kubeletRoot, 'config.json'),
      JSON.stringify({
        auths: {
          [`${registry.host}/private`]: { username: USER, password: PASSWORD },
          [`http://${registry.host}/wrong`]: { username: USER, password: WRONG_PASSWORD },
        },
      }),
      { mode: 0o600 },
    );
    // HOME points at an empty folder, so no docker config of the machine's user takes part.
    s = await startSplitlet({ nodeName: NODE, args: ['--runtime', 'containerd'], stateDir, env: { HOME: home } });
    // Plain HTTP to the registry, declared the containerd way (hosts.toml in the CRI registry config_path).
    const hostDir = join(containerdPaths(stateDir).registryConfigDir, registry.host);
    mkdirSync(hostDir, { recursive: true });
    writeFileSync(join(hostDir, 'hosts.toml'), `server = "http://${registry.host}"\n\n[host."http://${registry.host}"]\n  capabilities = ["pull", "resolve"]\n`);
    manifests = join(s.stateDir, 'manifests');
    obs = await NodeObserver.start(s.info() as unknown as InstanceInfo, s.natsCredential('cli'));

    const pod = (name: string, img: string, extra: Record<string, unknown> = {}): void =>
      writeFileSync(
        join(manifests, `${name}.json`),
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name },
          spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: img, imagePullPolicy: 'Always', command: ['sleep', '3600'] }], ...extra },
        }),
      );
    pod('reg-ok', image('private'));
    pod('reg-wrong', image('wrong'));
    pod('reg-anon', image('anon'), { imagePullSecrets: [{ name: 'regcred' }] });
    appliedAt = Date.now();
  });

  /** When the pod's first container was first seen waiting with `reason`, in ms after the manifests were written. */
  const firstSeen = (name: string, reason: string): number | undefined => {
    const o = obs.history(`${name}-${NODE}`).find((h) => h.pod.status?.containerStatuses?.[0]?.state?.waiting?.reason === reason);
    return o === undefined ? undefined : o.at - appliedAt;
  };

  after(async () => {
    await obs?.stop();
    await stopSplitlet(s, stateDir, { containerd: true });
    if (home !== undefined) rmSync(home, { recursive: true, force: true });
    await registry?.close();
  });

  const eventsOf = (name: string): KubeEvent[] => obs.events((e) => e.involvedObject.name === `${name}-${NODE}`);
  const eventTexts = (name: string): string[] => [...new Set(eventsOf(name).map((e) => `${e.eventType} ${e.reason}: ${e.message}`))];
  const waitingReason = (name: string): string | undefined => obs.pod(`${name}-${NODE}`)?.status?.containerStatuses?.[0]?.state?.waiting?.reason;
  const unauthorized = (img: string): string =>
    `rpc error: code = Unknown desc = failed to pull and unpack image "${img}": failed to resolve reference "${img}": pulling from host ${registry.host} failed with status code [manifests 1.0]: 401 Unauthorized`;

  it('pulls with the node’s config.json credentials: Pulling, Pulled, Created, Started, Running', async () => {
    await waitFor('reg-ok Running', async () => obs.pod(`reg-ok-${NODE}`)?.status?.phase === 'Running', 90_000, 50);
    const img = image('private');
    const texts = eventTexts('reg-ok');
    const pulled = texts.find((t) => t.startsWith('Normal Pulled: '));
    assert.match(
      pulled ?? '',
      new RegExp(`^Normal Pulled: Successfully pulled image "${img.replace(/[.]/g, '\\.')}" in ([0-9.]+m?s) \\(([0-9.]+m?s) including waiting\\)\\. Image size: [0-9]+ bytes\\.$`),
      texts.join('\n'),
    );
    for (const want of [`Normal Pulling: Pulling image "${img}"`, 'Normal Created: Created container: main', 'Normal Started: Started container main']) {
      assert.ok(texts.includes(want), `event ${want} in:\n${texts.join('\n')}`);
    }
    // MissingClusterDNS is this node's (no cluster DNS configured), not the pull's.
    assert.ok(!texts.some((t) => t.startsWith('Warning') && !t.startsWith('Warning MissingClusterDNS:')), texts.join('\n'));
    const ok = registry.requests.filter((r) => r.path.startsWith('/v2/private/') && r.status === 200);
    assert.ok(ok.length >= 3 && ok.every((r) => r.user === USER), 'manifest and blobs were fetched as alice');
    const running = obs.history(`reg-ok-${NODE}`).find((h) => h.pod.status?.phase === 'Running');
    console.log(`# reg-ok: ${pulled?.slice('Normal Pulled: '.length)}; Running seen ${running === undefined ? '?' : running.at - appliedAt} ms after the manifest was written`);
  });

  it('a wrong password: ErrImagePull with containerd’s 401 text, then ImagePullBackOff', async () => {
    const img = image('wrong');
    await waitFor('reg-wrong ImagePullBackOff', async () => waitingReason('reg-wrong') === 'ImagePullBackOff', 120_000, 50);
    const reasons = obs.history(`reg-wrong-${NODE}`).map((o) => o.pod.status?.containerStatuses?.[0]?.state?.waiting?.reason);
    // ErrImagePull came first. The observer polls statuses about every 75 ms, and the sync after the failed pull
    // (poked by the new sandbox's PLEG event) can replace it sooner; its event, emitted with that status, is then
    // the proof: the ErrImagePull event precedes the ImagePullBackOff one.
    const order = eventsOf('reg-wrong').map((e) => `${e.eventType} ${e.reason}: ${e.message}`);
    const errAt = order.indexOf('Warning Failed: Error: ErrImagePull');
    const backOffAt = order.indexOf('Warning Failed: Error: ImagePullBackOff');
    assert.ok(reasons.includes('ErrImagePull') || (errAt >= 0 && errAt < backOffAt), `ErrImagePull came first: statuses ${reasons.join(', ')}; events ${order.join(' | ')}`);
    const waiting = obs.pod(`reg-wrong-${NODE}`)?.status?.containerStatuses?.[0]?.state?.waiting;
    assert.deepEqual({ reason: waiting?.reason, message: waiting?.message }, { reason: 'ImagePullBackOff', message: `Back-off pulling image "${img}"` });
    const texts = eventTexts('reg-wrong');
    for (const want of [
      `Normal Pulling: Pulling image "${img}"`,
      `Warning Failed: Failed to pull image "${img}": ${unauthorized(img)}`,
      'Warning Failed: Error: ErrImagePull',
      `Normal BackOff: Back-off pulling image "${img}"`,
      'Warning Failed: Error: ImagePullBackOff',
    ]) {
      assert.ok(texts.includes(want), `event ${want} in:\n${texts.join('\n')}`);
    }
    assert.ok(!texts.some((t) => /Pulled|Created|Started|FailedToRetrieveImagePullSecret/.test(t)), texts.join('\n'));
    const tried = registry.requests.filter((r) => r.path.startsWith('/v2/wrong/'));
    assert.ok(tried.some((r) => r.withAuthorization) && tried.every((r) => r.status === 401), 'credentials were sent and refused');
    console.log(
      `# reg-wrong: ErrImagePull seen at ${firstSeen('reg-wrong', 'ErrImagePull')} ms, ImagePullBackOff at ${firstSeen('reg-wrong', 'ImagePullBackOff')} ms; ${tried.length} registry requests, all 401`,
    );
  });

  it('no matching credentials and a pull secret standalone mode cannot retrieve: anonymous 401, ImagePullBackOff, FailedToRetrieveImagePullSecret', async () => {
    const img = image('anon');
    await waitFor('reg-anon ImagePullBackOff', async () => waitingReason('reg-anon') === 'ImagePullBackOff', 120_000, 50);
    const texts = eventTexts('reg-anon');
    for (const want of [
      'Warning FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (regcred); attempting to pull the image may not succeed.',
      `Normal Pulling: Pulling image "${img}"`,
      `Warning Failed: Failed to pull image "${img}": ${unauthorized(img)}`,
      'Warning Failed: Error: ErrImagePull',
      `Normal BackOff: Back-off pulling image "${img}"`,
      'Warning Failed: Error: ImagePullBackOff',
    ]) {
      assert.ok(texts.includes(want), `event ${want} in:\n${texts.join('\n')}`);
    }
    const secretEvent = eventsOf('reg-anon').find((e) => e.reason === 'FailedToRetrieveImagePullSecret');
    assert.equal(secretEvent?.eventType, 'Warning');
    assert.equal(secretEvent?.involvedObject.fieldPath, undefined, 'the event is about the pod, not a container');
    const tried = registry.requests.filter((r) => r.path.startsWith('/v2/anon/'));
    assert.ok(tried.length > 0 && tried.every((r) => !r.withAuthorization && r.status === 401), 'pulled anonymously');
    console.log(
      `# reg-anon: ErrImagePull seen at ${firstSeen('reg-anon', 'ErrImagePull')} ms, ImagePullBackOff at ${firstSeen('reg-anon', 'ImagePullBackOff')} ms; ${tried.length} anonymous registry requests`,
    );
    const log = readFileSync(join(s.stateDir, 'logs', 'cri-adapter.log'), 'utf8');
    assert.match(log, /"msg":"Unable to retrieve pull secret, the image pull may not succeed\.".*"imagePullRef":"default\/regcred"/);
  });

  it('the password is in no log line, no output, no span and nowhere on the bus', async () => {
    const secrets = [PASSWORD, WRONG_PASSWORD, Buffer.from(`${USER}:${PASSWORD}`).toString('base64'), Buffer.from(`${USER}:${WRONG_PASSWORD}`).toString('base64')];
    // The spans published to the bus: the CRI PullImage spans are among them.
    const bus = await connectCliBus(s.info().natsUrl, s.info().nodeName, undefined, s.natsCredential('cli'));
    const spans: SpanRecord[] = [];
    try {
      await bus.readSpans(Subjects.spansAll(NODE), (r) => spans.push(r));
    } finally {
      await bus.close();
    }
    assert.ok(
      spans.some((sp) => sp.name === 'runtime.v1.ImageService/PullImage'),
      `PullImage spans were recorded (${spans.length} spans)`,
    );
    const spanText = JSON.stringify(spans);
    // Every file splitlet wrote (process logs, the NATS store with every stream and KV bucket), but the
    // node's own config.json (where the credentials live) and containerd's folder (not splitlet's).
    const files = filesUnder(s.stateDir, ['kubelet/config.json', 'containerd']);
    assert.ok(files.some((f) => f.endsWith('cri-adapter.log')) && files.some((f) => f.includes(`${join(s.stateDir, 'nats')}/`)), 'logs and the NATS store were searched');
    const output = s.output.join('\n');
    for (const secret of secrets) {
      assert.ok(!spanText.includes(secret), 'no span holds a credential');
      assert.ok(!output.includes(secret), 'the supervisor output holds no credential');
      for (const f of files) assert.ok(!readFileSync(f).includes(secret), `${relative(s.stateDir, f)} holds no credential`);
    }
    console.log(`# searched ${files.length} files, ${spans.length} spans and ${s.output.length} output lines for the credentials`);
  });
});
