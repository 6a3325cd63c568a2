/**
 * Ordinary manifests on `splitlet up --runtime sim`: the simulator behaves like a node with a
 * reachable registry (nginx, a registry.k8s.io image: Pulling/Pulled, Running), `:latest` with the
 * default policy is pulled on every start, and servers in simulated pods answer real HTTP on the
 * pod IP (nginx's :80, busybox httpd).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { podNamed, startSplitlet, waitFor, type Instance, type PodJson } from './harness.ts';

const NODE = 'sim-images';

interface EventJson {
  eventType: string;
  reason: string;
  message: string;
  involvedObject: { kind: string; name: string };
}

describe('ordinary images on the simulated runtime', () => {
  let s: Instance;
  let manifests: string;

  before(async () => {
    s = await startSplitlet({ nodeName: NODE });
    manifests = join(s.stateDir, 'manifests');
  });
  after(async () => {
    assert.equal(await s.stop(), 0);
  });

  const events = async (pod: string): Promise<EventJson[]> =>
    (await s.cli(['events', '-o', 'json']))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as EventJson)
      .filter((e) => e.involvedObject.name === pod);
  const running = (name: string): Promise<PodJson> =>
    waitFor(
      `${name} Running`,
      async () => {
        const p = podNamed(await s.pods(), name);
        return p?.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.state?.['running'] !== undefined) ? p : undefined;
      },
      60_000,
    );
  const pod = (name: string, spec: Record<string, unknown>): string => JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec });

  test('nginx:1.27 and a registry.k8s.io image are pulled (Pulling, Pulled) and run; nginx answers on the pod IP', async () => {
    writeFileSync(join(manifests, 'web.json'), pod('web', { containers: [{ name: 'nginx', image: 'nginx:1.27', ports: [{ containerPort: 80 }] }] }));
    writeFileSync(
      join(manifests, 'agnhost.json'),
      pod('agnhost', { containers: [{ name: 'agnhost', image: 'registry.k8s.io/e2e-test-images/agnhost:2.52', args: ['netexec', '--http-port=8080'] }] }),
    );
    const web = await running(`web-${NODE}`);
    await running(`agnhost-${NODE}`);
    for (const [name, image] of [
      [`web-${NODE}`, 'nginx:1.27'],
      [`agnhost-${NODE}`, 'registry.k8s.io/e2e-test-images/agnhost:2.52'],
    ] as const) {
      const ev = await waitFor(`${name} Pulled`, async () => {
        const all = await events(name);
        return all.some((e) => e.reason === 'Pulled') ? all : undefined;
      });
      const pulls = ev.filter((e) => e.reason === 'Pulling' || e.reason === 'Pulled');
      assert.equal(pulls[0]?.message, `Pulling image "${image}"`);
      assert.match(pulls[1]?.message ?? '', new RegExp(`^Successfully pulled image "${image.replace(/[.]/g, '\\.')}" in [\\d.]+m?s \\(.*\\)\\. Image size: \\d+ bytes\\.$`));
    }
    const ip = web.status?.podIP ?? '';
    assert.match(ip, /^127\.77\./);
    const res = await fetch(`http://${ip}/`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /Welcome to nginx!/);
  });

  test('busybox httpd in a pod answers a real HTTP GET on the pod IP', async () => {
    writeFileSync(
      join(manifests, 'httpd.json'),
      pod('httpd', {
        containers: [{ name: 'httpd', image: 'busybox:1.36', command: ['sh', '-c', 'mkdir -p /www && echo ok from the pod > /www/index.html && exec httpd -f -p 8080 -h /www'] }],
      }),
    );
    const p = await running(`httpd-${NODE}`);
    const res = await waitFor('httpd answers', async () => fetch(`http://${p.status?.podIP ?? ''}:8080/`).catch(() => undefined));
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'ok from the pod\n');
  });

  test(':latest with the default policy (Always) is pulled again at every container start', async () => {
    writeFileSync(join(manifests, 'latest.json'), pod('latest', { containers: [{ name: 'c', image: 'busybox:latest', command: ['sh', '-c', 'sleep 0.5; exit 1'] }] }));
    const name = `latest-${NODE}`;
    const ev = await waitFor(
      'two starts, each after a pull',
      async () => {
        const all = await events(name);
        return all.filter((e) => e.reason === 'Started').length >= 2 ? all : undefined;
      },
      90_000,
      500,
    );
    const seq = ev.filter((e) => ['Pulling', 'Pulled', 'Started'].includes(e.reason)).map((e) => e.reason);
    assert.deepEqual(seq.slice(0, 6), ['Pulling', 'Pulled', 'Started', 'Pulling', 'Pulled', 'Started']);
    assert.ok(
      ev.every((e) => e.reason !== 'Pulled' || !/already present/.test(e.message)),
      'never "already present on machine"',
    );
  });
});
