import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EnvResolutionError, expand, expandCommandAndArgs, makeEnvironmentVariables, mappingFuncFor, type EnvContext } from '../src/kuberuntime/env.js';
import { aPod } from './fixtures.js';

const ctx: EnvContext = { podIP: '10.88.0.7', podIPs: ['10.88.0.7'], hostIPs: ['192.168.1.2'], nodeAllocatable: { milliCpu: 2000, memoryBytes: 4 * 1024 ** 3 } };

describe('expand ($(VAR) expansion, kubelet rules)', () => {
  const mapping = mappingFuncFor(new Map([['VAR_A', 'A'], ['VAR_B', 'B'], ['EMPTY', '']]));
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
    assert.deepEqual(env.map((e) => e.value), ['128', '250', '2']);
  });

  it('refuses configMap and secret references (standalone), skips optional ones', () => {
    const pod = aPod();
    assert.throws(
      () => makeEnvironmentVariables(pod, { name: 'c', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k' } } }] }, ctx),
      (e: unknown) => e instanceof EnvResolutionError && /not available in standalone mode/.test(e.message) && /cm\/k/.test(e.message),
    );
    assert.throws(
      () => makeEnvironmentVariables(pod, { name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] }, ctx),
      /Secret references are not available in standalone mode/,
    );
    const env = makeEnvironmentVariables(pod, { name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'k', optional: true } } }] }, ctx);
    assert.deepEqual(env, []);
  });

  it('rejects an unsupported fieldPath', () => {
    assert.throws(() => makeEnvironmentVariables(aPod(), { name: 'c', env: [{ name: 'X', valueFrom: { fieldRef: { fieldPath: 'spec.nope' } } }] }, ctx), /unsupported fieldPath: spec.nope/);
  });
});

describe('expandCommandAndArgs', () => {
  it('expands command and args with the container env; $$ escapes', () => {
    const out = expandCommandAndArgs({ name: 'c', command: ['sh', '-c', 'echo $(MSG) $$(MSG)'], args: ['$(MISSING)'] }, [{ name: 'MSG', value: 'hi' }]);
    assert.deepEqual(out, { command: ['sh', '-c', 'echo hi $(MSG)'], args: ['$(MISSING)'] });
  });
});
