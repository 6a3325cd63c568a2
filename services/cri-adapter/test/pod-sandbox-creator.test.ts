/**
 * PodSandboxCreator: the node's resolv.conf and the pod log directory are worked on side by side,
 * then RunPodSandbox; a failure names the step the kubelet would have failed at.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CriRuntime, NodeFiles } from '../src/ports.js';
import { PodSandboxCreator } from '../src/kuberuntime/pod-sandbox-creator.js';
import { aPod } from './fixtures.js';

/** A file operation held until the test lets it end. */
interface Held {
  readonly started: string[];
  release(op: string, error?: Error): void;
}

function heldFiles(): NodeFiles & Held {
  const started: string[] = [];
  const waiting = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  const hold = (op: string): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      started.push(op);
      waiting.set(op, { resolve, reject });
    });
  const unused = (): never => {
    throw new Error('not used by the sandbox creator');
  };
  return {
    started,
    release(op, error) {
      const w = waiting.get(op);
      assert.ok(w, `${op} started`);
      if (error === undefined) w.resolve();
      else w.reject(error);
    },
    readResolvConf: async () => {
      await hold('resolv.conf');
      return 'nameserver 10.0.0.2\n';
    },
    ensureDir: async () => hold('log dir'),
    readNodeHostsFile: unused,
    listDir: unused,
    writeFile: unused,
    readAtMost: unused,
    readLogTail: unused,
  };
}

function creator(files: NodeFiles, calls: string[]): PodSandboxCreator {
  const runtime = {
    RunPodSandbox: async () => {
      calls.push('RunPodSandbox');
      return { podSandboxId: 'sb-1' };
    },
  } as unknown as CriRuntime;
  return new PodSandboxCreator({
    runtime,
    recorder: { record: () => undefined },
    nodeFiles: files,
    sandbox: { podLogDir: '/var/log/pods', dns: { clusterDns: ['10.96.0.10'], clusterDomain: 'cluster.local', hasResolvConf: true } },
  });
}

const flush = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('PodSandboxCreator', () => {
  it('reads resolv.conf and makes the log directory side by side, then runs the sandbox', async () => {
    const files = heldFiles();
    const calls: string[] = [];
    const creating = creator(files, calls).create(aPod({ uid: 'u1' }), 0);
    await flush();
    assert.deepEqual([...files.started].sort(), ['log dir', 'resolv.conf'], 'both started before either ended');
    files.release('log dir');
    await flush();
    assert.deepEqual(calls, [], 'not before the config');
    files.release('resolv.conf');
    assert.deepEqual(await creating, { ok: true, sandboxId: 'sb-1' });
    assert.deepEqual(calls, ['RunPodSandbox']);
  });

  it('both failing: the config failure is reported (the kubelet fails there first), after the directory work ended', async () => {
    const files = heldFiles();
    const calls: string[] = [];
    let done = false;
    const creating = creator(files, calls)
      .create(aPod({ uid: 'u2', name: 'web' }), 0)
      .finally(() => (done = true));
    await flush();
    files.release('resolv.conf', new Error('open /etc/resolv.conf: permission denied'));
    await flush();
    assert.equal(done, false, 'waits for the directory');
    files.release('log dir', new Error('mkdir /var/log/pods/x: read-only file system'));
    const r = await creating;
    assert.equal(r.ok, false);
    assert.match(r.ok ? '' : r.message, /^Failed to generate sandbox config for pod "web_default\(u2\)": open \/etc\/resolv\.conf: permission denied$/);
    assert.deepEqual(calls, []);
  });

  it('only the directory failing: the log directory failure is reported and no sandbox is run', async () => {
    const files = heldFiles();
    const calls: string[] = [];
    const creating = creator(files, calls).create(aPod({ uid: 'u3', name: 'web' }), 0);
    await flush();
    files.release('log dir', new Error('mkdir /var/log/pods/x: read-only file system'));
    files.release('resolv.conf');
    const r = await creating;
    assert.match(r.ok ? '' : r.message, /^Failed to create log directory for pod "web_default\(u3\)": mkdir \/var\/log\/pods\/x: read-only file system$/);
    assert.deepEqual(calls, []);
  });
});
