// podSandboxChanged (kuberuntime/util/util_test.go TestPodSandboxChanged-style table), container lookups
// and the container hash.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { containerStatusFor, containersNewestFirst, findRuntimeContainer, hashContainer, podIPsAfterTeardown, podSandboxChanged, sandboxesNewestFirst } from '../../src/index.js';
import { aContainer, aPod, aRunningContainer, aRuntimeStatus, aSandbox, anExitedContainer } from '../../src/testing/index.js';

describe('podSandboxChanged', () => {
  const pod = aPod();
  const rows: Array<[string, Parameters<typeof aSandbox>[0][], boolean, { changed: boolean; attempt: number; sandboxId: string }]> = [
    ['no sandbox', [], false, { changed: true, attempt: 0, sandboxId: '' }],
    ['one ready sandbox', [{}], false, { changed: false, attempt: 0, sandboxId: 'sandboxID' }],
    ['latest not ready', [{ state: 'SANDBOX_NOTREADY', attempt: 2 }], false, { changed: true, attempt: 3, sandboxId: 'sandboxID' }],
    [
      'two ready sandboxes',
      [
        { id: 'old', createdAt: 1, attempt: 0 },
        { id: 'new', createdAt: 2, attempt: 1 },
      ],
      false,
      { changed: true, attempt: 2, sandboxId: 'new' },
    ],
    [
      'newest ready, older not ready',
      [
        { id: 'old', createdAt: 1, attempt: 0, state: 'SANDBOX_NOTREADY' },
        { id: 'new', createdAt: 2, attempt: 1 },
      ],
      false,
      { changed: false, attempt: 1, sandboxId: 'new' },
    ],
    ['network mode changed', [{ hostNetwork: true }], false, { changed: true, attempt: 1, sandboxId: '' }],
    ['hostNetwork pod on hostNetwork sandbox', [{ hostNetwork: true, ip: '' }], true, { changed: false, attempt: 0, sandboxId: 'sandboxID' }],
    ['no IP', [{ ip: '' }], false, { changed: true, attempt: 1, sandboxId: 'sandboxID' }],
  ];
  for (const [name, sandboxes, hostNetwork, want] of rows) {
    it(name, () => {
      const p = aPod({ spec: { hostNetwork } });
      assert.deepEqual(podSandboxChanged(p, { sandboxes: sandboxes.map((s) => aSandbox(s)) }), want);
    });
  }
  it('ignores pod identity', () => assert.equal(podSandboxChanged(pod, aRuntimeStatus(pod)).changed, false));
});

describe('runtime lookups', () => {
  const c = aContainer();
  const rs = aRuntimeStatus(aPod(), {
    containers: [anExitedContainer(c, 1, { id: 'a', createdAt: 1 }), aRunningContainer(c, { id: 'b', createdAt: 3 }), anExitedContainer(c, 0, { id: 'x', createdAt: 2 })],
    sandboxes: [aSandbox({ id: 's1', createdAt: 1 }), aSandbox({ id: 's2', createdAt: 5 })],
  });
  it('containerStatusFor returns the latest instance', () => assert.equal(containerStatusFor('foo1', rs)?.id, 'b'));
  it('containerStatusFor returns undefined for an unknown name', () => assert.equal(containerStatusFor('nope', rs), undefined));
  it('findRuntimeContainer by id', () => assert.equal(findRuntimeContainer(rs, 'x')?.exitCode, 0));
  it('newest first', () => {
    assert.deepEqual(
      containersNewestFirst(rs).map((x) => x.id),
      ['b', 'x', 'a'],
    );
    assert.deepEqual(
      sandboxesNewestFirst(rs).map((x) => x.id),
      ['s2', 's1'],
    );
  });
});

describe('podIPsAfterTeardown (GenericPLEG.getPodIPs)', () => {
  const ready = [aSandbox()];
  const notReady = [aSandbox({ state: 'SANDBOX_NOTREADY', ip: '' })];
  const rows: Array<[string, string[] | undefined, string[], typeof ready, string[]]> = [
    ['new IPs win', ['10.0.0.1'], ['10.0.0.9'], ready, ['10.0.0.9']],
    ['no IPs, sandbox gone: the old ones stay', ['10.0.0.1', 'fd00::1'], [], notReady, ['10.0.0.1', 'fd00::1']],
    ['no IPs, no sandbox at all: the old ones stay', ['10.0.0.1'], [], [], ['10.0.0.1']],
    ['no IPs but a ready sandbox: none (the runtime says so)', ['10.0.0.1'], [], ready, []],
    ['nothing before', undefined, [], notReady, []],
    ['no IPs before either', [], [], notReady, []],
  ];
  for (const [name, before, ips, sandboxes, want] of rows) {
    it(name, () => assert.deepEqual(podIPsAfterTeardown(before === undefined ? undefined : { ips: before }, { ips, sandboxes }), want));
  }
});

describe('hashContainer', () => {
  it('is deterministic over key order and hex', () => {
    const a = hashContainer({ name: 'x', image: 'busybox', command: ['sh'] });
    const b = hashContainer({ command: ['sh'], image: 'busybox', name: 'x' });
    assert.equal(a, b);
    assert.match(a, /^[0-9a-f]{1,8}$/);
  });
  it('changes with the definition', () => {
    assert.notEqual(hashContainer({ name: 'x', image: 'busybox' }), hashContainer({ name: 'x', image: 'busybox:1' }));
    assert.notEqual(hashContainer({ name: 'x', image: 'busybox' }), hashContainer({ name: 'x', image: 'busybox', args: ['1'] }));
  });
  it('ignores undefined members', () => assert.equal(hashContainer({ name: 'x', image: 'busybox' }), hashContainer({ name: 'x', image: 'busybox', args: undefined })));
});
