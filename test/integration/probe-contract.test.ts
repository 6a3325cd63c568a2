/**
 * The probe contract (issue 10): the pods of contract/probe-scenarios.ts on a real
 * `splitlet up --runtime sim` and `--runtime containerd`, checked with the kubelet's texts —
 * readiness flapping through the thresholds, a liveness restart (events, restartCount, lastState,
 * the probe-level grace), a startup probe holding liveness back, an exec probe timeout, a sidecar
 * with a startup probe, httpGet/tcpSocket on the pod IP (containerd's CNI bridge, the simulator's
 * 127.77.x.x loopback), a Deployment-style web pod (nginx:1.27 on the simulator), `splitlet exec`
 * exit codes and output, the prober's metrics, and the prober killed with -9: probes resume and
 * nothing restarts because of it.
 *
 * The containerd half is skipped, with the reason printed, where a local containerd cannot run.
 * PROBE_CONTRACT_ONLY=sim|containerd runs one half.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Subjects } from '@splitlet/api';
import type { KubeEvent, Pod, SpanRecord } from '@splitlet/api';
import { GrpcRuntimeService } from '@splitlet/cri';
import type { InstanceInfo } from '../../services/cli/src/state-dir.ts';
import { connectCliBus } from '../../services/cli/src/target.ts';
import { containerdSkipReason, criEndpointOf, repoRoot, startSplitlet, stopSplitlet, waitFor } from './harness.ts';
import type { Instance } from './harness.ts';
import { NodeObserver } from './contract/node-observer.ts';
import { PROBE_SCENARIOS, manifestOn } from './contract/probe-scenarios.ts';
import type { ProbeScenarioId } from './contract/probe-scenarios.ts';
import { parsePrometheusText, sumOf } from './prom-text.ts';

const execFileP = promisify(execFile);
const NODE = 'probe-node';
const only = process.env['PROBE_CONTRACT_ONLY'];
const containerdSkip = only === 'sim' ? 'PROBE_CONTRACT_ONLY=sim' : containerdSkipReason();
const simSkip = only === 'containerd' ? 'PROBE_CONTRACT_ONLY=containerd' : undefined;
if (containerdSkip !== undefined) console.log(`# probe contract on containerd skipped: ${containerdSkip}`);

type RuntimeName = 'sim' | 'containerd';

const noFile = (path: string): string => `cat: can't open '${path}': No such file or directory\n`;
const condition = (p: Pod | undefined, type: string) => p?.status?.conditions?.find((c) => c.type === type);
const container = (p: Pod | undefined, name: string) => [...(p?.status?.initContainerStatuses ?? []), ...(p?.status?.containerStatuses ?? [])].find((c) => c.name === name);
const ms = (e: KubeEvent): number => Date.parse(e.timestamp);

function probeContract(runtime: RuntimeName, skip: string | undefined): void {
  describe(`probe contract on ${runtime}`, { skip: skip ?? false, timeout: 420_000 }, () => {
    let stateDir: string | undefined;
    let s: Instance;
    let obs: NodeObserver;
    let cri: GrpcRuntimeService;
    const scenarios = PROBE_SCENARIOS.filter((sc) => sc.runtimes.includes(runtime));
    const full = (id: ProbeScenarioId): string => `${id}-${NODE}`;
    const uidOf = (id: ProbeScenarioId): string => obs.pod(full(id))?.metadata.uid ?? '';
    const eventsOf = (id: ProbeScenarioId, reason?: string): KubeEvent[] => obs.events((e) => e.involvedObject.uid === uidOf(id) && (reason === undefined || e.reason === reason));
    const waitEvent = (id: ProbeScenarioId, reason: string, message: string | RegExp, timeoutMs = 60_000): Promise<KubeEvent> =>
      waitFor(
        `${id}: ${reason} ${String(message)}`,
        async () => eventsOf(id, reason).find((e) => (typeof message === 'string' ? e.message === message : message.test(e.message))),
        timeoutMs,
        100,
      );
    const waitPod = (id: ProbeScenarioId, what: string, pred: (p: Pod) => boolean, timeoutMs = 90_000): Promise<Pod> =>
      waitFor(
        `${id}: ${what}`,
        async () => {
          const p = obs.pod(full(id));
          return p !== undefined && pred(p) ? p : undefined;
        },
        timeoutMs,
        100,
      );
    /** `splitlet exec`; resolves the exit code and output (a non-zero exit is not an error here). */
    const execIn = async (id: ProbeScenarioId, c: string, cmd: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
      try {
        const { stdout, stderr } = await execFileP(process.execPath, [join(repoRoot, 'services/cli/bin/splitlet.js'), 'exec', full(id), '-c', c, '--', ...cmd], {
          env: { ...process.env, SPLITLET_STATE_DIR: s.stateDir },
        });
        return { code: 0, stdout, stderr };
      } catch (e) {
        const x = e as { code?: number; stdout?: string; stderr?: string };
        return { code: x.code ?? -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
      }
    };

    before(async () => {
      stateDir = mkdtempSync(join(tmpdir(), `splitlet-probe-${runtime}-`));
      s = await startSplitlet({ nodeName: NODE, podWorkers: 1, args: ['--runtime', runtime], stateDir });
      obs = await NodeObserver.start(s.info() as unknown as InstanceInfo, s.natsCredential('cli'));
      cri = await GrpcRuntimeService.connect({ endpoint: criEndpointOf(runtime, s.stateDir), timeoutMs: 30_000 });
      for (const sc of scenarios) writeFileSync(join(s.stateDir, 'manifests', `${sc.id}.json`), JSON.stringify(manifestOn(sc, runtime)));
    });

    after(async () => {
      cri?.close();
      await obs?.stop();
      await stopSplitlet(s, stateDir, { containerd: runtime === 'containerd' });
    });

    describe('scenarios', { concurrency: true }, () => {
      it('readiness-flap: Ready follows the probe through its thresholds; splitlet exec runs commands', async () => {
        let p = await waitPod('readiness-flap', 'Ready', (x) => condition(x, 'Ready')?.status === 'True' && container(x, 'app')?.ready === true);
        assert.equal(condition(p, 'ContainersReady')?.status, 'True');
        const r = await execIn('readiness-flap', 'app', ['sh', '-c', 'echo out; echo err >&2; exit 3']);
        assert.deepEqual(r, { code: 3, stdout: 'out\n', stderr: 'err\ncommand terminated with exit code 3\n' });
        assert.equal((await execIn('readiness-flap', 'app', ['rm', '/tmp/ready'])).code, 0);
        const removedAt = Date.now();
        p = await waitPod('readiness-flap', 'not Ready', (x) => condition(x, 'Ready')?.status === 'False');
        const notReadyAt = obs.history(full('readiness-flap')).find((o) => o.at >= removedAt && condition(o.pod, 'Ready')?.status === 'False')?.at ?? Date.now();
        // failureThreshold 2: two failures were recorded before Ready went False (events may arrive after the status).
        await waitFor(
          'two readiness failures before Ready went False',
          async () => eventsOf('readiness-flap', 'Unhealthy').filter((e) => ms(e) >= removedAt - 1000 && ms(e) <= notReadyAt).length >= 2,
          15_000,
          100,
        );
        assert.equal(condition(p, 'Ready')?.reason, 'ContainersNotReady');
        assert.equal(condition(p, 'Ready')?.message, 'containers with unready status: [app]');
        assert.equal(container(p, 'app')?.ready, false);
        await waitEvent('readiness-flap', 'Unhealthy', `Readiness probe failed: ${noFile('/tmp/ready')}`);
        assert.equal((await execIn('readiness-flap', 'app', ['touch', '/tmp/ready'])).code, 0);
        p = await waitPod('readiness-flap', 'Ready again', (x) => condition(x, 'Ready')?.status === 'True');
        assert.equal(container(p, 'app')?.restartCount, 0, 'readiness never restarts');
        assert.equal(eventsOf('readiness-flap', 'Killing').length, 0);
      });

      it('liveness-restart: Unhealthy, Killing, a restart with lastState, within the probe-level grace', async () => {
        await waitEvent('liveness-restart', 'Unhealthy', `Liveness probe failed: ${noFile('/tmp/alive')}`);
        const killing = await waitEvent('liveness-restart', 'Killing', 'Container app failed liveness probe, will be restarted');
        const p = await waitPod('liveness-restart', 'restarted', (x) => (container(x, 'app')?.restartCount ?? 0) >= 1 && container(x, 'app')?.lastState?.terminated !== undefined);
        const last = container(p, 'app')?.lastState?.terminated;
        assert.equal(last?.exitCode, 137, 'the TERM-ignoring container was killed at the grace period');
        assert.equal(last?.reason, 'Error');
        const first = (await cri.ListContainers({ filter: { labelSelector: { 'io.kubernetes.pod.uid': uidOf('liveness-restart') } } })).containers.find(
          (c) => c.metadata?.attempt === 0,
        );
        assert.ok(first !== undefined, 'the first instance is kept (one dead container per container)');
        const st = (await cri.ContainerStatus({ containerId: first.id })).status;
        const stopS = (Number(BigInt(st?.finishedAt ?? '0') / 1_000_000n) - ms(killing)) / 1000;
        assert.ok(stopS >= 2 && stopS < 15, `stopped ${stopS.toFixed(2)} s after Killing: the probe's 3 s grace, not the pod's 30 s`);
      });

      it('startup-gate: no liveness probe runs before the startup probe succeeded', async () => {
        const startupFail = await waitEvent('startup-gate', 'Unhealthy', `Startup probe failed: ${noFile('/tmp/started')}`);
        const p0 = obs.pod(full('startup-gate'));
        assert.equal(container(p0, 'app')?.started, false, 'not started while the startup probe fails');
        const liveFail = await waitEvent('startup-gate', 'Unhealthy', `Liveness probe failed: ${noFile('/tmp/alive')}`);
        assert.ok(
          ms(liveFail) - ms(startupFail) >= 4000,
          `the first liveness failure came ${ms(liveFail) - ms(startupFail)} ms after the first startup failure; the startup probe needs ~6 s`,
        );
        await waitEvent('startup-gate', 'Killing', 'Container app failed liveness probe, will be restarted');
      });

      it('startup-fail: a failing startup probe kills and restarts the container', async () => {
        await waitEvent('startup-fail', 'Unhealthy', `Startup probe failed: ${noFile('/tmp/never')}`);
        await waitEvent('startup-fail', 'Killing', 'Container app failed startup probe, will be restarted');
        const p = await waitPod('startup-fail', 'restarted', (x) => (container(x, 'app')?.restartCount ?? 0) >= 1);
        assert.equal(container(p, 'app')?.started, false);
        assert.equal(eventsOf('startup-fail', 'Unhealthy').filter((e) => e.message.startsWith('Liveness')).length, 0);
      });

      it('exec-timeout: a probe outliving timeoutSeconds fails with the kubelet text', async () => {
        await waitEvent('exec-timeout', 'Unhealthy', 'Readiness probe failed: command "sleep 5" timed out');
        const p = obs.pod(full('exec-timeout'));
        assert.equal(container(p, 'app')?.ready, false);
        assert.equal(p?.status?.phase, 'Running');
      });

      it('sidecar-startup: the sidecar counts as started once its startup probe passed', async () => {
        const p = await waitPod(
          'sidecar-startup',
          'Running and initialized',
          (x) => x.status?.phase === 'Running' && condition(x, 'Initialized')?.status === 'True' && container(x, 'app')?.state?.running !== undefined,
        );
        const side = container(p, 'side');
        assert.equal(side?.started, true);
        assert.equal(side?.ready, true);
        assert.ok(
          eventsOf('sidecar-startup', 'Unhealthy').some((e) => e.message === `Startup probe failed: ${noFile('/tmp/up')}`),
          'the startup probe failed first',
        );
        const out = await s.cli(['get', 'pods', full('sidecar-startup')]);
        assert.match(out, /sidecar-startup-probe-node\s+2\/2\s+Running/);
      });

      it('http-tcp: httpGet on a named port, a 404, tcpSocket open and refused', async () => {
        const p = await waitPod('http-tcp', 'web ready', (x) => container(x, 'web')?.ready === true);
        const ip = p.status?.podIP ?? '';
        assert.match(ip, /^\d+\.\d+\.\d+\.\d+$/);
        await waitEvent('http-tcp', 'Unhealthy', 'Readiness probe failed: HTTP probe failed with statuscode: 404');
        await waitEvent('http-tcp', 'Unhealthy', `Readiness probe failed: dial tcp ${ip}:9999: connect: connection refused`);
        const now = obs.pod(full('http-tcp'));
        assert.equal(container(now, 'web')?.restartCount, 0, 'the tcpSocket liveness probe passes');
        assert.equal(container(now, 'notfound')?.ready, false);
        assert.equal(container(now, 'closed')?.ready, false);
        assert.equal(eventsOf('http-tcp', 'Killing').length, 0);
      });

      it('web-deployment: Ready only once its readiness probe passes; a failing liveness probe restarts it', async () => {
        const id = 'web-deployment';
        // Started (the startup probe on / passed), serving, but not Ready: /ready is missing.
        let p = await waitPod(id, 'web started', (x) => container(x, 'web')?.started === true && x.status?.podIP !== undefined);
        await waitEvent(id, 'Unhealthy', 'Readiness probe failed: HTTP probe failed with statuscode: 404');
        p = obs.pod(full(id)) ?? p;
        assert.equal(p.status?.phase, 'Running');
        assert.equal(condition(p, 'Ready')?.status, 'False');
        assert.equal(container(p, 'web')?.ready, false);
        const page = await fetch(`http://${p.status?.podIP ?? ''}/healthz`);
        assert.equal(page.status, 200, 'the postStart hook wrote the health file, served on the pod IP');
        assert.equal(await page.text(), 'ok\n');
        const html = '/usr/share/nginx/html';
        assert.equal((await execIn(id, 'web', ['sh', '-c', `echo ready > ${html}/ready`])).code, 0);
        p = await waitPod(id, 'Ready', (x) => condition(x, 'Ready')?.status === 'True' && container(x, 'web')?.ready === true);
        assert.equal(container(p, 'web')?.restartCount, 0);
        assert.equal(eventsOf(id, 'Unhealthy').filter((e) => e.message.startsWith('Liveness')).length, 0, 'the liveness probe passes while /healthz is served');
        // The liveness probe fails: the kubelet's Unhealthy events, Killing, a restart with lastState; not Ready after it.
        assert.equal((await execIn(id, 'web', ['rm', `${html}/healthz`])).code, 0);
        await waitEvent(id, 'Unhealthy', 'Liveness probe failed: HTTP probe failed with statuscode: 404');
        await waitEvent(id, 'Killing', 'Container web failed liveness probe, will be restarted');
        await waitPod(id, 'restarted', (x) => (container(x, 'web')?.restartCount ?? 0) >= 1 && container(x, 'web')?.lastState?.terminated !== undefined);
        assert.ok(eventsOf(id, 'Unhealthy').filter((e) => e.message === 'Liveness probe failed: HTTP probe failed with statuscode: 404').length >= 1);
        // The new container has a fresh filesystem: healthz rewritten by postStart, /ready gone again.
        p = await waitPod(
          id,
          'running again, not Ready',
          (x) => container(x, 'web')?.state?.running !== undefined && container(x, 'web')?.started === true && condition(x, 'Ready')?.status === 'False',
        );
        assert.equal(container(p, 'web')?.ready, false);
      });

      it('steady: passing probes make the pod Ready', async () => {
        await waitPod('steady', 'Ready', (x) => condition(x, 'Ready')?.status === 'True' && container(x, 'app')?.started === true);
      });
    });

    it("a liveness failure is a span in the pod's episode, and the sync that kills the container continues its trace", async () => {
      const uid = uidOf('liveness-restart');
      const info = s.info() as unknown as InstanceInfo;
      const bus = await connectCliBus(info.natsUrl, info.nodeName, undefined, s.natsCredential('cli'));
      try {
        const found = await waitFor(
          'the probe span and the kill in one trace',
          async () => {
            const spans: SpanRecord[] = [];
            await bus.readSpans(Subjects.spansAll(NODE), (r) => spans.push(r));
            const probe = spans.find((x) => x.name === 'probe Liveness' && x.attributes['k8s.pod.uid'] === uid && x.attributes['splitlet.probe.result'] === 'Failure');
            if (probe === undefined) return undefined;
            const inTrace = spans.filter((x) => x.traceId === probe.traceId);
            const byId = new Map(inTrace.map((x) => [x.spanId, x]));
            const descends = (x: SpanRecord): boolean => {
              for (let p = x.parentSpanId; p !== undefined; p = byId.get(p)?.parentSpanId) if (p === probe.spanId) return true;
              return false;
            };
            const sync = inTrace.find((x) => x.name === 'syncPod' && x.service === 'pod-worker' && descends(x));
            const stop = inTrace.find((x) => x.name === 'runtime.v1.RuntimeService/StopContainer' && descends(x));
            return sync !== undefined && stop !== undefined ? { probe, inTrace } : undefined;
          },
          60_000,
          1000,
        );
        assert.equal(found.probe.service, 'prober');
        assert.equal(found.probe.statusCode, 2, 'a failed probe is an error span');
        assert.equal(found.inTrace.filter((x) => x.name === 'probe Liveness' && x.attributes['k8s.pod.uid'] === uid && x.traceId === found.probe.traceId).length >= 1, true);
      } finally {
        await bus.close();
      }
    });

    it('counts probes in prober_probe_total and prober_probe_duration_seconds', async () => {
      const port = s.info().processes.find((x) => x.name === 'prober')?.healthPort;
      assert.ok(port !== undefined);
      const families = parsePrometheusText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      const total = (probe_type: string, result: string, pod: string) => sumOf(families, 'prober_probe_total', { probe_type, result, pod, namespace: 'default', container: 'app' });
      assert.ok(total('Readiness', 'successful', full('steady')) > 0);
      assert.ok(total('Liveness', 'successful', full('steady')) > 0);
      assert.ok(total('Startup', 'successful', full('steady')) > 0);
      assert.ok(total('Readiness', 'failed', full('exec-timeout')) > 0);
      assert.ok(sumOf(families, 'prober_probe_duration_seconds_count', { pod: full('steady'), probe_type: 'Readiness' }) > 0);
    });

    it('prober killed with -9: probes resume and nothing restarts because of it', async () => {
      const before = s.info().processes.find((x) => x.name === 'prober');
      assert.ok(before !== undefined);
      const steady = obs.pod(full('steady'));
      const restarts = container(steady, 'app')?.restartCount;
      const containerID = container(steady, 'app')?.containerID;
      const killedAt = Date.now();
      process.kill(before.pid, 'SIGKILL');
      await waitFor('the supervisor restarted the prober', async () => s.info().processes.find((x) => x.name === 'prober' && x.pid !== before.pid), 60_000, 200);
      // Probes resume: the new process counts steady's probes (its port file is rewritten as it starts), and readiness flaps again.
      await waitFor(
        'the new prober probes',
        async () => {
          const now = s.info().processes.find((x) => x.name === 'prober');
          if (now === undefined || now.pid === before.pid || now.healthPort === undefined || now.healthPort === before.healthPort) return false;
          const families = parsePrometheusText(await (await fetch(`http://127.0.0.1:${now.healthPort}/metrics`)).text());
          return sumOf(families, 'prober_probe_total', { pod: full('steady'), result: 'successful' }) > 0;
        },
        60_000,
        500,
      );
      assert.equal((await execIn('readiness-flap', 'app', ['rm', '/tmp/ready'])).code, 0);
      await waitPod('readiness-flap', 'not Ready after the restart', (x) => condition(x, 'Ready')?.status === 'False');
      assert.equal((await execIn('readiness-flap', 'app', ['touch', '/tmp/ready'])).code, 0);
      await waitPod('readiness-flap', 'Ready after the restart', (x) => condition(x, 'Ready')?.status === 'True');
      // Nothing restarted, and steady never went unready.
      const now = obs.pod(full('steady'));
      assert.equal(container(now, 'app')?.restartCount, restarts);
      assert.equal(container(now, 'app')?.containerID, containerID);
      const flips = obs.history(full('steady')).filter((o) => o.at >= killedAt && condition(o.pod, 'Ready')?.status !== 'True');
      assert.deepEqual(
        flips.map((o) => condition(o.pod, 'Ready')),
        [],
        'steady stayed Ready through the prober restart',
      );
      assert.deepEqual(
        eventsOf('steady', 'Killing').map((e) => `${e.timestamp} ${e.message} (prober killed at ${new Date(killedAt).toISOString()})`),
        [],
      );
      assert.deepEqual(
        eventsOf('steady', 'Unhealthy').map((e) => `${e.timestamp} ${e.message}`),
        [],
      );
    });
  });
}

probeContract('sim', simSkip);
probeContract('containerd', containerdSkip);
