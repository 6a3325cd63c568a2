/**
 * Cluster mode, node side: `splitlet up --runtime sim` starts the embedded API server, writes the
 * kubeconfig to the state dir, and config-source's apiserver source runs the pods kubectl creates
 * for this node; `kubectl delete pod` (with grace) kills them. Real processes, real kubectl.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { podNamed, startSplitlet, waitFor } from './harness.ts';
import type { Instance, PodJson } from './harness.ts';

const run = promisify(execFile);
const KUBECTL = process.env['KUBECTL'] ?? '/usr/bin/kubectl';
const NODE = 'cluster-node';

async function kubectlSkipReason(): Promise<string | undefined> {
  try {
    await run(KUBECTL, ['version', '--client'], { timeout: 20_000 });
    return undefined;
  } catch (e) {
    return `kubectl not usable at ${KUBECTL}: ${e instanceof Error ? e.message : String(e)}`;
  }
}
const skip = await kubectlSkipReason();

function pod(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName: NODE,
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
});
