/**
 * Cluster mode, configMaps and secrets end to end: real kubectl against the embedded API server of
 * a real `splitlet up --runtime sim` (container output through `splitlet logs`). A configMap and a secret created with kubectl are mounted into
 * a pod (configMap volume, secret volume with items) and read in its env (configMapKeyRef,
 * secretKeyRef, envFrom with a prefix and an invalid key); the files have the exact contents and
 * modes, a configMap update reaches the volume within a minute, and a missing configMap, key or
 * volume source gives the kubelet's errors. Meanwhile every message on the bus (`>`) and every
 * process log is captured: the secret's value never appears there (the API server's own storage
 * bucket, its etcd, excepted).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { lstat, readFile, stat, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { KUBECTL, containerdSkipReason, kubectlSkipReason, startSplitlet, stopSplitlet, waitFor, type Instance } from './harness.ts';

const run = promisify(execFile);
const NODE = 'cfg-node';
const SECRET_VALUE = 'pa55-Zq81-never-on-the-bus';
const SECRET_B64 = Buffer.from(SECRET_VALUE).toString('base64');
/** A private registry the simulator guards with these credentials (pulled with a pull secret from the API). */
const REGISTRY = 'registry.example:5000';
const PULL_USER = 'puller';
const PULL_PASSWORD = 'reg-pw-77-never-on-the-bus';
const PULL_AUTH_B64 = Buffer.from(`${PULL_USER}:${PULL_PASSWORD}`).toString('base64');
/** Every form a secret value could leak in. */
const SECRET_FORMS = [SECRET_VALUE, SECRET_B64, PULL_PASSWORD, PULL_AUTH_B64];
/** The embedded API server's storage bucket (its etcd): the one place a secret is stored. */
const API_BUCKET = 'sl_api';

const skip = await kubectlSkipReason();
if (skip !== undefined) process.stdout.write(`# skipping cluster config tests: ${skip}\n`);
const containerdSkip = skip ?? containerdSkipReason();
if (containerdSkip !== undefined) process.stdout.write(`# skipping the containerd run: ${containerdSkip}\n`);

const APP_POD = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'cfgsec', namespace: 'default' },
  spec: {
    nodeName: NODE,
    terminationGracePeriodSeconds: 2,
    containers: [
      {
        name: 'app',
        image: 'busybox:1.36',
        command: [
          'sh',
          '-c',
          [
            'echo "GREETING=$GREETING"',
            'echo "FROM_ENVFROM=$greeting"',
            'echo "POD_NAME=$POD_NAME"',
            'cat /etc/config/app.conf',
            'if [ "$(cat /etc/secret/password)" = "$PASSWORD" ]; then echo secret-env-matches-file; fi',
            'if [ "$S_password" = "$PASSWORD" ]; then echo secret-envfrom-matches; fi',
            'echo ready',
            "trap 'exit 0' TERM; sleep 3600 & wait",
          ].join('; '),
        ],
        env: [
          { name: 'GREETING', valueFrom: { configMapKeyRef: { name: 'app-config', key: 'greeting' } } },
          { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'app-secret', key: 'password' } } },
          { name: 'OPTIONAL', valueFrom: { configMapKeyRef: { name: 'no-such-config', key: 'x', optional: true } } },
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        ],
        envFrom: [{ configMapRef: { name: 'app-config' } }, { prefix: 'S_', secretRef: { name: 'app-secret' } }],
        volumeMounts: [
          { name: 'config', mountPath: '/etc/config' },
          { name: 'secret', mountPath: '/etc/secret', readOnly: true },
        ],
      },
    ],
    volumes: [
      { name: 'config', configMap: { name: 'app-config' } },
      { name: 'secret', secret: { secretName: 'app-secret', items: [{ key: 'password', path: 'password' }] } },
    ],
  },
};

function simplePod(name: string, extra: { env?: unknown[]; volumes?: unknown[]; volumeMounts?: unknown[] }): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: 'main',
          image: 'busybox:1.36',
          command: ['sleep', '3600'],
          ...(extra.env ? { env: extra.env } : {}),
          ...(extra.volumeMounts ? { volumeMounts: extra.volumeMounts } : {}),
        },
      ],
      ...(extra.volumes ? { volumes: extra.volumes } : {}),
    },
  };
}

/** Mount points at or below `dir` (from /proc/self/mountinfo). */
function mountsUnder(dir: string): string[] {
  if (!existsSync('/proc/self/mountinfo')) return [];
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m === dir || m.startsWith(`${dir}/`));
}

for (const runtime of ['sim', 'containerd'] as const) {
  describe(`configMaps and secrets: kubectl → splitlet up (${runtime})`, { skip: runtime === 'sim' ? skip : containerdSkip, timeout: 900_000 }, () => {
    let s: Instance;
    let stateDir: string;
    let kubeconfig: string;
    let nc: NatsConnection | undefined;
    const leaks: string[] = [];
    let captured = 0;
    /** Secret-bearing messages of the API server's own storage (the control: the capture does see secrets where they are). */
    let storageHits = 0;

    const kubectl = async (args: string[], input?: string): Promise<string> => {
      const p = run(KUBECTL, ['--kubeconfig', kubeconfig, ...args], { timeout: 60_000 });
      if (input !== undefined) p.child.stdin?.end(input);
      return (await p).stdout;
    };
    const jsonpath = async (kind: string, name: string, path: string): Promise<string> => (await kubectl(['get', kind, name, '-o', `jsonpath=${path}`])).trim();
    const events = async (pod: string): Promise<string[]> =>
      (await kubectl(['get', 'events', '--field-selector', `involvedObject.name=${pod}`, '-o', 'jsonpath={range .items[*]}{.reason}: {.message}{"\\n"}{end}']))
        .split('\n')
        .filter((l) => l !== '');

    before(async () => {
      stateDir = mkdtempSync(join(tmpdir(), `splitlet-cfgsec-${runtime}-`));
      s = await startSplitlet({
        nodeName: NODE,
        podWorkers: 1,
        stateDir,
        args: ['--runtime', runtime],
        env: { SIM_PRIVATE_REGISTRIES: JSON.stringify([{ host: REGISTRY, pathPrefix: 'private/', username: PULL_USER, password: PULL_PASSWORD }]) },
      });
      kubeconfig = join(s.stateDir, 'kubeconfig');
      // Capture everything on the bus from now on.
      const admin = s.natsCredential('admin');
      nc = await connect({ servers: s.info().natsUrl, user: admin.user, pass: admin.password });
      const sub = nc.subscribe('>');
      void (async () => {
        for await (const m of sub) {
          captured++;
          const text = Buffer.from(m.data).toString('latin1');
          const holds = SECRET_FORMS.some((f) => text.includes(f));
          if (m.subject.startsWith(`$KV.${API_BUCKET}.`) || (m.reply ?? '').startsWith(`$JS.ACK.KV_${API_BUCKET}.`) || m.headers?.get('Nats-Stream') === `KV_${API_BUCKET}`) {
            if (holds) storageHits++;
            continue;
          }
          if (holds) leaks.push(`bus message on ${m.subject}`);
        }
      })();
      await waitFor('kubeconfig', async () => existsSync(kubeconfig), 60_000);
      await waitFor('API server answers', async () => (await kubectl(['get', 'ns', 'default', '-o', 'name'])).includes('namespace/default'), 60_000);
    });

    after(async () => {
      await nc?.close();
      if (s === undefined) {
        await stopSplitlet(undefined, stateDir, { containerd: runtime === 'containerd' });
        return;
      }
      // Pods first, so their volumes (a secret one is a tmpfs) are torn down by the node itself.
      await kubectl(['delete', 'pods', '--all', '--grace-period=1', '--wait=false']).catch(() => '');
      await waitFor('volumes unmounted', async () => mountsUnder(s.stateDir).length === 0, 90_000).catch(() => undefined);
      if (s.child.exitCode === null && s.child.signalCode === null) {
        const exited = once(s.child, 'exit');
        s.child.kill('SIGTERM');
        await exited;
      }
      for (const m of mountsUnder(s.stateDir).reverse()) await run('umount', ['-l', m]).catch(() => undefined);
      await stopSplitlet(s, stateDir, { containerd: runtime === 'containerd' });
    });

    test('a configMap and a secret mounted and in env: exact contents, modes, env values', async () => {
      await kubectl([
        'create',
        'configmap',
        'app-config',
        '--from-literal=greeting=hello world',
        '--from-literal=app.conf=port=8080\nmode=blue\n',
        '--from-literal=1st=skipped-in-env',
      ]);
      await kubectl(['create', 'secret', 'generic', 'app-secret', `--from-literal=password=${SECRET_VALUE}`, '--from-literal=user=admin']);
      await kubectl(['apply', '-f', '-'], JSON.stringify(APP_POD));
      let last = '';
      const logs = await waitFor(
        'cfgsec logs',
        async () => {
          // `splitlet logs` (the node's log service); the embedded API server does not proxy pods/log under `splitlet up` yet.
          last = await s.cli(['logs', 'cfgsec', '-c', 'app']).catch((e: unknown) => `splitlet logs failed: ${(e as { stderr?: string }).stderr ?? String(e)}`);
          return last.includes('ready') ? last : undefined;
        },
        120_000,
      ).catch(async (e: unknown) => {
        throw new Error(`${(e as Error).message}\nlast: ${last}\nevents: ${(await events('cfgsec')).join('\n')}`, { cause: e });
      });
      assert.equal(logs, 'GREETING=hello world\nFROM_ENVFROM=hello world\nPOD_NAME=cfgsec\nport=8080\nmode=blue\nsecret-env-matches-file\nsecret-envfrom-matches\nready\n');
      assert.equal(await jsonpath('pod', 'cfgsec', '{.status.phase}'), 'Running');

      // The volumes on the node: the kubelet's layout, atomic writer symlinks, modes.
      const uid = await jsonpath('pod', 'cfgsec', '{.metadata.uid}');
      const volumes = join(s.stateDir, 'kubelet', 'pods', uid, 'volumes');
      const cfgDir = join(volumes, 'kubernetes.io~configmap', 'config');
      assert.deepEqual(
        readdirSync(cfgDir)
          .filter((n) => !n.startsWith('..'))
          .sort(),
        ['1st', 'app.conf', 'greeting'],
      );
      assert.equal(await readFile(join(cfgDir, 'greeting'), 'utf8'), 'hello world');
      assert.ok((await lstat(join(cfgDir, 'greeting'))).isSymbolicLink());
      assert.equal((await stat(join(cfgDir, 'app.conf'))).mode & 0o777, 0o644);
      const secretDir = join(volumes, 'kubernetes.io~secret', 'secret');
      assert.deepEqual(
        readdirSync(secretDir).filter((n) => !n.startsWith('..')),
        ['password'],
        'items: only the listed key',
      );
      assert.equal(await readFile(join(secretDir, 'password'), 'utf8'), SECRET_VALUE);
      assert.equal((await stat(join(secretDir, 'password'))).mode & 0o777, 0o644, 'secret files are 0644 by default');
      if (process.getuid?.() === 0) assert.ok(mountsUnder(s.stateDir).includes(secretDir), 'the secret volume is a tmpfs');

      // envFrom skipped the key that is not a variable name, with the kubelet's event.
      assert.ok(
        (await events('cfgsec')).includes(
          'InvalidEnvironmentVariableNames: Keys [1st] from the EnvFrom configMap default/app-config were skipped since they are considered invalid environment variable names.',
        ),
        (await events('cfgsec')).join('\n'),
      );
      // The file through the container's own mount.
      assert.equal(await s.cli(['exec', 'cfgsec', '-c', 'app', '--', 'cat', '/etc/config/greeting']), 'hello world');
    });

    test('a secret applied with stringData is stored as data (the node reads data only)', async () => {
      const manifest = {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'string-data', namespace: 'default' },
        data: { a: Buffer.from('from-data').toString('base64') },
        stringData: { b: 'from-string' },
      };
      await kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
      assert.equal(
        await jsonpath('secret', 'string-data', '{.data.a} {.data.b} {.stringData}'),
        `${Buffer.from('from-data').toString('base64')} ${Buffer.from('from-string').toString('base64')}`,
      );
    });

    test('a configMap update reaches the mounted volume within a minute', async () => {
      const started = Date.now();
      const cm = JSON.parse(await kubectl(['get', 'configmap', 'app-config', '-o', 'json'])) as { data: Record<string, string> };
      cm.data = { greeting: 'bonjour', 'app.conf': 'port=9090\n' };
      await kubectl(['replace', '-f', '-'], JSON.stringify(cm));
      await waitFor(
        'the new greeting in the container',
        async () => (await s.cli(['exec', 'cfgsec', '-c', 'app', '--', 'cat', '/etc/config/greeting']).catch(() => '')) === 'bonjour',
        60_000,
      );
      const ms = Date.now() - started;
      process.stdout.write(`# configMap update visible in the container after ${ms} ms\n`);
      assert.ok(ms < 60_000);
      assert.equal(await s.cli(['exec', 'cfgsec', '-c', 'app', '--', 'cat', '/etc/config/app.conf']), 'port=9090\n');
      assert.equal(
        await s.cli(['exec', 'cfgsec', '-c', 'app', '--', 'test', '-e', '/etc/config/1st']).then(
          () => 'exists',
          () => 'gone',
        ),
        'gone',
        'a removed key is removed',
      );
    });

    test('a missing configMap or key in env → CreateContainerConfigError with the kubelet message', async () => {
      await kubectl(['apply', '-f', '-'], JSON.stringify(simplePod('no-cm', { env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'missing-cm', key: 'k' } } }] })));
      await kubectl(['apply', '-f', '-'], JSON.stringify(simplePod('no-key', { env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'app-config', key: 'nope' } } }] })));
      await kubectl(['apply', '-f', '-'], JSON.stringify(simplePod('no-secret', { env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'missing-secret', key: 'k' } } }] })));
      const waiting = (pod: string): Promise<string> =>
        waitFor(
          `${pod} waiting`,
          async () => {
            const w = await jsonpath('pod', pod, '{.status.containerStatuses[0].state.waiting.reason}|{.status.containerStatuses[0].state.waiting.message}');
            return w.startsWith('CreateContainerConfigError|') ? w : undefined;
          },
          120_000,
        );
      assert.equal(await waiting('no-cm'), 'CreateContainerConfigError|configmap "missing-cm" not found');
      assert.equal(await waiting('no-key'), "CreateContainerConfigError|couldn't find key nope in ConfigMap default/app-config");
      assert.equal(await waiting('no-secret'), 'CreateContainerConfigError|secret "missing-secret" not found');
      assert.ok((await events('no-cm')).includes('Failed: Error: configmap "missing-cm" not found'));

      // Creating the configMap lets the container start on a later sync.
      await kubectl(['create', 'configmap', 'missing-cm', '--from-literal=k=v']);
      await waitFor('no-cm running', async () => (await jsonpath('pod', 'no-cm', '{.status.containerStatuses[0].state.running.startedAt}')) !== '', 120_000);
    });

    test('a missing configMap volume → FailedMount event, the pod stays ContainerCreating', async () => {
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify(simplePod('no-vol', { volumes: [{ name: 'v', configMap: { name: 'absent-vol' } }], volumeMounts: [{ name: 'v', mountPath: '/etc/v' }] })),
      );
      await waitFor(
        'FailedMount',
        async () => (await events('no-vol')).includes('FailedMount: MountVolume.SetUp failed for volume "v" : configmap "absent-vol" not found'),
        120_000,
      );
      assert.equal(await jsonpath('pod', 'no-vol', '{.status.phase}'), 'Pending');
      assert.equal(await jsonpath('pod', 'no-vol', '{.status.containerStatuses[0].state.waiting.reason}'), 'ContainerCreating');
    });

    // The simulator guards a private registry; the local containerd has no registry at all.
    test(
      'image pull secrets from the API: a pod naming a docker-registry secret pulls from the private registry; without it the pull is refused; a missing one is reported',
      { skip: runtime === 'containerd' ? 'no registry for the local containerd' : false },
      async () => {
        await kubectl(['create', 'secret', 'docker-registry', 'regcred', `--docker-server=${REGISTRY}`, `--docker-username=${PULL_USER}`, `--docker-password=${PULL_PASSWORD}`]);
        // Each pod its own image: a present image is not pulled again (IfNotPresent).
        const pullPod = (name: string, secrets: string[]): string =>
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name, namespace: 'default' },
            spec: {
              nodeName: NODE,
              terminationGracePeriodSeconds: 1,
              imagePullSecrets: secrets.map((n) => ({ name: n })),
              containers: [{ name: 'main', image: `${REGISTRY}/private/${name}:1.0`, command: ['sleep', '3600'] }],
            },
          });
        await kubectl(['apply', '-f', '-'], pullPod('reg-ok', ['regcred']));
        await kubectl(['apply', '-f', '-'], pullPod('reg-none', []));
        await kubectl(['apply', '-f', '-'], pullPod('reg-missing', ['no-such-regcred']));
        await waitFor('reg-ok running', async () => (await jsonpath('pod', 'reg-ok', '{.status.phase}')) === 'Running', 120_000).catch(async (e: unknown) => {
          throw new Error(`${(e as Error).message}\n${(await events('reg-ok')).join('\n')}`, { cause: e });
        });
        assert.ok((await events('reg-ok')).some((e) => e.startsWith(`Pulled: Successfully pulled image "${REGISTRY}/private/reg-ok:1.0"`)));
        for (const pod of ['reg-none', 'reg-missing']) {
          await waitFor(
            `${pod} refused`,
            async () => /^(ErrImagePull|ImagePullBackOff)$/.test(await jsonpath('pod', pod, '{.status.containerStatuses[0].state.waiting.reason}')),
            120_000,
          );
        }
        assert.ok(
          (await events('reg-missing')).includes(
            'FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (no-such-regcred); attempting to pull the image may not succeed.',
          ),
          (await events('reg-missing')).join('\n'),
        );
        assert.ok((await events('reg-none')).some((e) => e.includes('401 Unauthorized')));
      },
    );

    test('the secret value never went on the bus or into a log', async () => {
      assert.ok(captured > 100, `the capture saw the bus traffic (${captured} messages)`);
      assert.ok(storageHits > 0, 'the capture sees secret values where they are stored (the API server bucket)');
      assert.deepEqual(leaks, []);
      // The process logs (the containerd under the state dir has its own, outside `logs/`).
      const logsDir = join(s.stateDir, 'logs');
      const files = readdirSync(logsDir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile());
      assert.ok(files.length > 5, 'the process logs were read');
      for (const f of files) {
        const text = readFileSync(join(f.parentPath, f.name), 'latin1');
        assert.ok(!SECRET_FORMS.some((form) => text.includes(form)), `${f.name} holds a secret`);
      }
    });
  });
}

describe('standalone mode (splitlet up --no-apiserver, sim): configMap references get the kubelet client-less errors, nothing crashes', { timeout: 300_000 }, () => {
  const STANDALONE = 'standalone-node';
  let s: Instance | undefined;
  before(async () => {
    s = await startSplitlet({ nodeName: STANDALONE, podWorkers: 1, args: ['--runtime', 'sim', '--no-apiserver'] });
  });
  after(async () => {
    if (s !== undefined) assert.equal(await s.stop(), 0);
  });

  test('env reference → CreateContainerConfigError; configMap volume → FailedMount; every process stays up', async () => {
    const inst = s as Instance;
    const manifests = join(inst.stateDir, 'manifests');
    const pod = (name: string, spec: object): string => JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { terminationGracePeriodSeconds: 1, ...spec } });
    await writeFile(
      join(manifests, 'env-ref.json'),
      pod('env-ref', {
        containers: [{ name: 'main', image: 'busybox:1.36', command: ['sleep', '3600'], env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k' } } }] }],
      }),
    );
    await writeFile(
      join(manifests, 'vol-ref.json'),
      pod('vol-ref', {
        containers: [{ name: 'main', image: 'busybox:1.36', command: ['sleep', '3600'], volumeMounts: [{ name: 'v', mountPath: '/etc/v' }] }],
        volumes: [{ name: 'v', configMap: { name: 'cfg' } }],
      }),
    );
    const envPod = `env-ref-${STANDALONE}`;
    await waitFor(
      'env-ref CreateContainerConfigError',
      async () => {
        const w = (await inst.pods()).find((p) => p.metadata.name === envPod)?.status?.containerStatuses?.[0]?.state?.waiting;
        return w?.reason === 'CreateContainerConfigError' && w.message === "couldn't get configMap default/cfg, no kubeClient defined";
      },
      120_000,
    );
    const volPod = `vol-ref-${STANDALONE}`;
    await waitFor(
      'vol-ref FailedMount',
      async () => (await inst.cli(['describe', 'pod', volPod])).includes(`MountVolume.SetUp failed for volume "v" : couldn't get configMap default/cfg, no kubeClient defined`),
      120_000,
    );
    const p = (await inst.pods()).find((x) => x.metadata.name === volPod);
    assert.equal(p?.status?.phase, 'Pending');
    // Nothing crashed: every process is still the one that started.
    const info = inst.info();
    assert.ok(info.processes.every((x) => x.pid > 0));
    assert.ok(!inst.output.some((l) => /process exited with|restarting in/.test(l)), inst.output.filter((l) => /process exited with|restarting in/.test(l)).join('\n'));
  });
});
