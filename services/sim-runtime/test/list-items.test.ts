/**
 * The simulator's List replies carry wire bytes framed from per-item encodings: they must be the
 * bytes encoding the reply object would give, and follow each object's state.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { criMessageEncoder, GrpcRuntimeService, wireBytesOf } from '@splitlet/cri';
import { startSimCri } from '../src/simulator.js';

describe('List replies with wire bytes', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sim-list-items-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('are the encoding of the reply, as served, before and after a state change', async () => {
    const simCri = await startSimCri();
    const client = await GrpcRuntimeService.connect({ endpoint: simCri.endpoint, connectTimeoutMs: 5000 });
    try {
      const { sim } = simCri;
      const config = { metadata: { name: 'p', namespace: 'default', uid: 'uid-1', attempt: 0 }, logDirectory: dir, labels: { 'io.kubernetes.pod.uid': 'uid-1' } };
      const { podSandboxId } = await sim.RunPodSandbox({ config });
      const ids: string[] = [];
      for (const name of ['a', 'b']) {
        const c = await sim.CreateContainer({
          podSandboxId,
          sandboxConfig: config,
          config: { metadata: { name }, image: { image: 'busybox:1.36' }, command: ['sleep', 'infinity'], labels: { n: name } },
        });
        ids.push(c.containerId);
      }
      const encodeContainers = criMessageEncoder('runtime.v1.ListContainersResponse');
      const encodeSandboxes = criMessageEncoder('runtime.v1.ListPodSandboxResponse');
      const check = async (): Promise<void> => {
        const containers = await sim.ListContainers({});
        assert.deepEqual(Buffer.from(wireBytesOf(containers) ?? []), Buffer.from(encodeContainers(containers)));
        assert.deepEqual(await client.ListContainers({}), structuredClone(containers));
        const sandboxes = await sim.ListPodSandbox({});
        assert.deepEqual(Buffer.from(wireBytesOf(sandboxes) ?? []), Buffer.from(encodeSandboxes(sandboxes)));
        assert.deepEqual(await client.ListPodSandbox({}), structuredClone(sandboxes));
      };
      await check();
      await sim.StartContainer({ containerId: ids[0] });
      assert.deepEqual(
        (await client.ListContainers({})).containers.map((c) => [c.id, c.state]),
        [
          [ids[0], 'CONTAINER_RUNNING'],
          [ids[1], 'CONTAINER_CREATED'],
        ],
      );
      await check();
      await sim.StopPodSandbox({ podSandboxId });
      assert.equal((await client.ListPodSandbox({})).items[0]?.state, 'SANDBOX_NOTREADY');
      await check();
    } finally {
      client.close();
      await simCri.close();
    }
  });

  it('share frozen items, so no caller changes what the next call lists', async () => {
    const simCri = await startSimCri();
    try {
      const { sim } = simCri;
      await sim.RunPodSandbox({ config: { metadata: { name: 'p', namespace: 'default', uid: 'uid-2', attempt: 0 }, logDirectory: dir } });
      const [item] = (await sim.ListPodSandbox({})).items;
      assert.ok(item !== undefined && Object.isFrozen(item) && Object.isFrozen(item.labels));
      assert.throws(() => {
        (item.labels as Record<string, string>)['x'] = 'y';
      }, TypeError);
    } finally {
      await simCri.close();
    }
  });
});
