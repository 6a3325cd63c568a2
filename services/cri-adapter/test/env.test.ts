import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EnvResolutionError, expand, expandCommandAndArgs, fetchEnvObjects, makeEnvironmentVariables, mappingFuncFor, type EnvContext } from '../src/kuberuntime/env.js';
import { aPod } from './fixtures.js';

const ctx: EnvContext = { podIP: '10.88.0.7', podIPs: ['10.88.0.7'], hostIPs: ['192.168.1.2'], nodeAllocatable: { milliCpu: 2000, memoryBytes: 4 * 1024 ** 3 } };

describe('expand ($(VAR) expansion, kubelet rules)', () => {
  const mapping = mappingFuncFor(
    new Map([
      ['VAR_A', 'A'],
      ['VAR_B', 'B'],
      ['EMPTY', ''],
    ]),
  );
  const cases: Array<[string, string]> = [
    ['$(VAR_A)', 'A'],
    ['___$(VAR_B)___', '___B___'],
    ['$(VAR_A)-$(VAR_B)', 'A-B'],
    ['$$(VAR_A)', '$(VAR_A)'],
    ['$$$(VAR_A)', '$A'],
    ['$$$$(VAR_A)', '$$(VAR_A)'],
    ['$(UNKNOWN)', '$(UNKNOWN)'],
    ['$(VAR_A', '$(VAR_A'],
    ['$VAR_A', '$VAR_A'],
    ['foo$', 'foo$'],
    ['$(EMPTY)x', 'x'],
    ['foo$()bar', 'foo$()bar'],
    ['no refs', 'no refs'],
    ['$$', '$'],
  ];
  for (const [input, want] of cases) {
    it(`${JSON.stringify(input)} → ${JSON.stringify(want)}`, () => assert.equal(expand(input, mapping), want));
  }
});

describe('makeEnvironmentVariables', () => {
  it('expands values against earlier variables only, keeps order, last value wins', () => {
    const pod = aPod();
    const env = makeEnvironmentVariables(
      pod,
      {
        name: 'c',
        env: [
          { name: 'LATER_REF', value: '$(B)' },
          { name: 'A', value: 'a' },
          { name: 'B', value: '$(A)-b' },
          { name: 'A', value: 'a2' },
        ],
      },
      ctx,
    );
    assert.deepEqual(env, [
      { name: 'LATER_REF', value: '$(B)' },
      { name: 'A', value: 'a2' },
      { name: 'B', value: 'a-b' },
    ]);
  });

  it('resolves the downward API field refs', () => {
    const pod = aPod({ spec: { nodeName: 'node-1', serviceAccountName: 'sa' }, metadata: { labels: { app: 'web' } } });
    const fields = ['metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'spec.serviceAccountName', 'status.podIP', 'status.hostIP', "metadata.labels['app']"];
    const env = makeEnvironmentVariables(pod, { name: 'c', env: fields.map((f, i) => ({ name: `V${i}`, valueFrom: { fieldRef: { fieldPath: f } } })) }, ctx);
    assert.deepEqual(
      env.map((e) => e.value),
      ['web', 'default', 'uid-web', 'node-1', 'sa', '10.88.0.7', '192.168.1.2', 'web'],
    );
  });

  it('resolves resourceFieldRef (node allocatable without a limit)', () => {
    const env = makeEnvironmentVariables(
      aPod(),
      {
        name: 'c',
        resources: { limits: { memory: '128Mi' }, requests: { cpu: '250m' } },
        env: [
          { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
          { name: 'CPU_REQ', valueFrom: { resourceFieldRef: { resource: 'requests.cpu', divisor: '1m' } } },
          { name: 'CPU_LIM', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
        ],
      },
      ctx,
    );
    assert.deepEqual(
      env.map((e) => e.value),
      ['128', '250', '2'],
    );
  });

  it('standalone (no API client): any configMap or secret reference fails as the kubelet without a client, optional ones too', () => {
    const pod = aPod();
    assert.throws(
      () => makeEnvironmentVariables(pod, { name: 'c', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k' } } }] }, ctx),
      (e: unknown) => e instanceof EnvResolutionError && e.message === `couldn't get configMap ${pod.metadata.namespace}/cm, no kubeClient defined`,
    );
    assert.throws(() => makeEnvironmentVariables(pod, { name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'k', optional: true } } }] }, ctx), {
      message: `couldn't get secret ${pod.metadata.namespace}/s, no kubeClient defined`,
    });
    assert.throws(() => makeEnvironmentVariables(pod, { name: 'c', envFrom: [{ configMapRef: { name: 'cm', optional: true } }] }, ctx), {
      message: `couldn't get configMap ${pod.metadata.namespace}/cm, no kubeClient defined`,
    });
  });

  it('rejects an unsupported fieldPath', () => {
    assert.throws(
      () => makeEnvironmentVariables(aPod(), { name: 'c', env: [{ name: 'X', valueFrom: { fieldRef: { fieldPath: 'spec.nope' } } }] }, ctx),
      /unsupported fieldPath: spec.nope/,
    );
  });
});

describe('expandCommandAndArgs', () => {
  it('expands command and args with the container env; $$ escapes', () => {
    const out = expandCommandAndArgs({ name: 'c', command: ['sh', '-c', 'echo $(MSG) $$(MSG)'], args: ['$(MISSING)'] }, [{ name: 'MSG', value: 'hi' }]);
    assert.deepEqual(out, { command: ['sh', '-c', 'echo hi $(MSG)'], args: ['$(MISSING)'] });
  });
});

describe('makeEnvironmentVariables with configMaps and secrets (cluster mode)', () => {
  class NotFound extends Error {}
  /** An object source over fixed objects, counting fetches. */
  const source = (cms: Record<string, Record<string, string>>, secrets: Record<string, Record<string, string>>, fetched: string[] = []) => ({
    configMap: async (_ns: string, name: string) => {
      fetched.push(`cm/${name}`);
      const d = cms[name];
      if (d === undefined) throw new NotFound(`configmap "${name}" not found`);
      return new Map(Object.entries(d));
    },
    secret: async (_ns: string, name: string) => {
      fetched.push(`secret/${name}`);
      const d = secrets[name];
      if (d === undefined) throw new NotFound(`secret "${name}" not found`);
      return new Map(Object.entries(d));
    },
    isNotFound: (e: unknown) => e instanceof NotFound,
  });
  const resolve = async (container: object, cms: Record<string, Record<string, string>> = {}, secrets: Record<string, Record<string, string>> = {}) => {
    const pod = aPod();
    const warnings: string[] = [];
    const c = { name: 'c', ...container } as Parameters<typeof makeEnvironmentVariables>[1];
    const objects = await fetchEnvObjects(pod, c, source(cms, secrets));
    const env = makeEnvironmentVariables(pod, c, { ...ctx, objects, warn: (reason, message) => warnings.push(`${reason}: ${message}`) });
    return { env: env.map((e) => `${e.name}=${e.value}`), warnings, ns: pod.metadata.namespace };
  };

  it('configMapKeyRef and secretKeyRef read the value; env overrides envFrom; $(VAR) sees envFrom values', async () => {
    const r = await resolve(
      {
        envFrom: [{ configMapRef: { name: 'cfg' } }, { prefix: 'S_', secretRef: { name: 'creds' } }],
        env: [
          { name: 'GREETING', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'greeting' } } },
          { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
          { name: 'mode', value: 'override' },
          { name: 'MSG', value: '$(greeting) from $(S_user)' },
        ],
      },
      { cfg: { greeting: 'hello', mode: 'blue' } },
      { creds: { password: 'pw', user: 'admin' } },
    );
    assert.deepEqual(r.env, ['greeting=hello', 'mode=override', 'S_password=pw', 'S_user=admin', 'GREETING=hello', 'PASSWORD=pw', 'MSG=hello from admin']);
    assert.deepEqual(r.warnings, []);
  });

  it('envFrom skips keys that are not variable names (after the prefix) with the kubelet event', async () => {
    const r = await resolve(
      { envFrom: [{ configMapRef: { name: 'cfg' } }, { prefix: 'P_', secretRef: { name: 's' } }] },
      { cfg: { '1st': 'x', ok: 'y', 'a b': 'z' } },
      { s: { '9': 'n', 'has space': 'm' } },
    );
    assert.deepEqual(r.env, ['ok=y', 'P_9=n']);
    assert.deepEqual(r.warnings, [
      `InvalidEnvironmentVariableNames: Keys [1st, a b] from the EnvFrom configMap ${r.ns}/cfg were skipped since they are considered invalid environment variable names.`,
      `InvalidEnvironmentVariableNames: Keys [P_has space] from the EnvFrom secret ${r.ns}/s were skipped since they are considered invalid environment variable names.`,
    ]);
  });

  it('missing object or key: the kubelet errors, unless optional', async () => {
    await assert.rejects(resolve({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'absent', key: 'k' } } }] }), {
      name: 'EnvResolutionError',
      message: 'configmap "absent" not found',
    });
    await assert.rejects(resolve({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'absent', key: 'k' } } }] }), { message: 'secret "absent" not found' });
    await assert.rejects(resolve({ envFrom: [{ secretRef: { name: 'absent' } }] }), { message: 'secret "absent" not found' });
    const pod = aPod();
    await assert.rejects(resolve({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'nope' } } }] }, { cfg: {} }), {
      message: `couldn't find key nope in ConfigMap ${pod.metadata.namespace}/cfg`,
    });
    await assert.rejects(resolve({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'nope' } } }] }, {}, { s: {} }), {
      message: `couldn't find key nope in Secret ${pod.metadata.namespace}/s`,
    });
    const r = await resolve(
      {
        envFrom: [{ configMapRef: { name: 'absent', optional: true } }],
        env: [
          { name: 'A', valueFrom: { configMapKeyRef: { name: 'absent', key: 'k', optional: true } } },
          { name: 'B', valueFrom: { secretKeyRef: { name: 's', key: 'nope', optional: true } } },
          { name: 'C', value: 'c' },
        ],
      },
      {},
      { s: {} },
    );
    assert.deepEqual(r.env, ['C=c']);
  });

  it('an unavailable source (not NotFound) fails even an optional reference; each object is fetched once', async () => {
    const pod = aPod();
    const fetched: string[] = [];
    const c = {
      name: 'c',
      envFrom: [{ configMapRef: { name: 'cfg' } }],
      env: [
        { name: 'A', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'a' } } },
        { name: 'B', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'b' } } },
      ],
    } as Parameters<typeof makeEnvironmentVariables>[1];
    await fetchEnvObjects(pod, c, source({ cfg: { a: '1', b: '2' } }, {}, fetched));
    assert.deepEqual(fetched, ['cm/cfg']);
    const down = { ...source({}, {}), configMap: async () => Promise.reject(new Error('failed to sync configmap cache: timed out waiting for the condition')) };
    const opt = { name: 'c', env: [{ name: 'A', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'a', optional: true } } }] } as Parameters<typeof makeEnvironmentVariables>[1];
    const objects = await fetchEnvObjects(pod, opt, down);
    assert.throws(() => makeEnvironmentVariables(pod, opt, { ...ctx, objects }), { message: 'failed to sync configmap cache: timed out waiting for the condition' });
  });
});
