/**
 * Cluster mode, node side: `splitlet up --runtime sim` starts the embedded API server, writes the
 * kubeconfig to the state dir, and config-source's apiserver source runs the pods kubectl creates
 * for this node; `kubectl delete pod` (with grace) kills them. Real processes, real kubectl.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PodUpdate, Streams, Subjects } from '@splitlet/api';
import { connectCliBus } from '../../services/cli/src/target.ts';
import { KUBECTL, kubectlSkipReason, podNamed, startSplitlet, waitFor } from './harness.ts';
import type { Instance, PodJson } from './harness.ts';

const run = promisify(execFile);
const NODE = 'cluster-node';

const skip = await kubectlSkipReason();

/** A pod for `nodeName` (null: unbound, for the scheduler). */
function pod(name: string, nodeName: string | null = NODE): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      ...(nodeName === null ? {} : { nodeName }),
      terminationGracePeriodSeconds: 5,
      containers: [{ name: 'main', image: 'busybox:1.36', command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"] }],
    },
  });
}

describe('apiserver source: kubectl → splitlet up (sim)', { skip, timeout: 300_000 }, () => {
  let s: Instance;
  let kubeconfig: string;
  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const p = run(KUBECTL, ['--kubeconfig', kubeconfig, ...args], { timeout: 60_000 });
    if (input !== undefined) {
      p.child.stdin?.end(input);
    }
    return (await p).stdout;
  };

  before(async () => {
    s = await startSplitlet({ nodeName: NODE, podWorkers: 1 });
    kubeconfig = join(s.stateDir, 'kubeconfig');
  });
  after(async () => {
    assert.equal(await s.stop(), 0);
  });

  test('up starts the apiserver and writes the kubeconfig it announces', async () => {
    assert.ok(s.info().processes.some((p) => p.name === 'apiserver'));
    await waitFor('kubeconfig', async () => existsSync(kubeconfig), 60_000);
    assert.match(s.output.join(''), new RegExp(`kubectl --kubeconfig ${kubeconfig.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} get pods`));
    assert.match(await kubectl(['get', 'namespaces', '-o', 'name']), /namespace\/default/);
  });

  test('a pod created with kubectl for this node runs; kubectl delete kills its containers', async () => {
    await waitFor('kubeconfig', async () => existsSync(kubeconfig), 60_000);
    await kubectl(['apply', '-f', '-'], pod('from-api'));
    const running = await waitFor(
      'from-api Running',
      async () => {
        const p = podNamed(await s.pods(), 'from-api');
        return p?.status?.phase === 'Running' ? p : undefined;
      },
      120_000,
    );
    assert.equal(running.metadata.annotations?.['kubernetes.io/config.source'], 'api');
    const apiUid = (await kubectl(['get', 'pod', 'from-api', '-o', 'jsonpath={.metadata.uid}'])).trim();
    assert.equal(running.metadata.uid, apiUid, 'the node runs the API object (same UID)');

    await kubectl(['delete', 'pod', 'from-api', '--grace-period=3', '--wait=false']);
    await waitFor(
      'from-api containers killed',
      async () => {
        const p: PodJson | undefined = podNamed(await s.pods(), 'from-api');
        if (p === undefined) return true;
        const statuses = p.status?.containerStatuses ?? [];
        return statuses.length > 0 && statuses.every((c) => (c as { state?: { terminated?: unknown } }).state?.terminated !== undefined);
      },
      120_000,
    );
  });

  test('a pod without spec.nodeName: FailedScheduling while no Node exists, then scheduled onto the node and run', async () => {
    await waitFor('kubeconfig', async () => existsSync(kubeconfig), 60_000);
    const hasNode = (await kubectl(['get', 'nodes', '-o', 'name'])).includes(`node/${NODE}`);
    if (!hasNode) {
      await kubectl(['apply', '-f', '-'], pod('unscheduled', null));
      await waitFor(
        'FailedScheduling event',
        async () => (await kubectl(['get', 'events', '--field-selector', 'involvedObject.name=unscheduled', '-o', 'jsonpath={.items[*].reason}'])).includes('FailedScheduling'),
        60_000,
      ).catch((e: unknown) => {
        throw new Error(`no FailedScheduling event; apiserver log:\n${readFileSync(join(s.stateDir, 'logs', 'apiserver.log'), 'utf8').slice(-3000)}`, { cause: e });
      });
      assert.equal((await kubectl(['get', 'pod', 'unscheduled', '-o', 'jsonpath={.spec.nodeName}'])).trim(), '', 'stays unbound');
      assert.equal(podNamed(await s.pods(), 'unscheduled'), undefined, 'the node does not run an unbound pod');
      await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } }));
    } else {
      await kubectl(['apply', '-f', '-'], pod('unscheduled', null));
    }
    await waitFor('unscheduled bound', async () => (await kubectl(['get', 'pod', 'unscheduled', '-o', 'jsonpath={.spec.nodeName}'])).trim() === NODE, 60_000);
    assert.match(
      await kubectl(['get', 'events', '--field-selector', 'involvedObject.name=unscheduled', '-o', 'jsonpath={.items[*].message}']),
      new RegExp(`Successfully assigned default/unscheduled to ${NODE}`),
    );
    await waitFor('unscheduled Running on the node', async () => podNamed(await s.pods(), 'unscheduled')?.status?.phase === 'Running', 120_000);
  });

  test("a static pod's mirror: its status patches come back through the watch and put no RECONCILE on SL_CONFIG", async () => {
    await waitFor('kubeconfig', async () => existsSync(kubeconfig), 60_000);
    await s.cli(
      ['apply', '-f', '-'],
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: static-mirror\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n    command: ["sleep", "3600"]\n',
    );
    // Running in the API: status-manager created the mirror pod and patched its status at least twice (Pending, Running).
    const mirror = await waitFor(
      'the mirror pod Running',
      async () => {
        const out = await kubectl(['get', 'pod', `static-mirror-${NODE}`, '-o', 'json']).catch(() => undefined);
        const p = out === undefined ? undefined : (JSON.parse(out) as PodJson);
        return p?.status?.phase === 'Running' ? p : undefined;
      },
      120_000,
    );
    assert.ok(mirror.metadata.annotations?.['kubernetes.io/config.mirror']);
    const bus = await connectCliBus(s.info().natsUrl, NODE, undefined, s.natsCredential('admin'));
    try {
      const ops = await waitFor(
        "the mirror pod's ADD on SL_CONFIG",
        async () => {
          const seen: string[] = [];
          await bus.readStream(PodUpdate, Streams.config, Subjects.configAll(NODE), (u) => {
            if (u.items.some((i) => i.pod.metadata.uid === mirror.metadata.uid)) seen.push(u.op);
          });
          return seen.includes('ADD') ? seen : undefined;
        },
        30_000,
        500,
      );
      assert.deepEqual(
        ops.filter((op) => op === 'RECONCILE'),
        [],
        `config-source published the mirror pod's status changes (sync-loop ignores them): ${ops.join(', ')}`,
      );
    } finally {
      await bus.close();
    }
  });
});
