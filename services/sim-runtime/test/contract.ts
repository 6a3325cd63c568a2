/**
 * The CRI contract suite: the same cases against the simulator in-process and through
 * GrpcRuntimeService → serveCri on a unix socket, so the client, the server glue and the simulator
 * cannot drift apart. Files that call runContract() are the actual tests.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isCriError, type ContainerStatus, type CriInput, type ContainerConfig, type ImageService, type PodSandboxConfig, type RuntimeService } from '@splitlet/cri';
import { readCriLog } from '@splitlet/cri/testing';
import { eventually } from '@splitlet/testkit';
import type { SimRuntime } from '../src/simulator.js';

export type Cri = RuntimeService & ImageService;

export interface ContractTarget {
  /** What the tests call (the sim itself, or a client connected to it). */
  rt: Cri;
  /** The simulator behind it, for knobs. */
  sim: SimRuntime;
  close(): Promise<void>;
}

let seq = 0;

export async function waitExited(rt: Cri, containerId: string): Promise<ContainerStatus> {
  return eventually(
    async () => {
      const { status } = await rt.ContainerStatus({ containerId });
      return status?.state === 'CONTAINER_EXITED' ? status : undefined;
    },
    { message: `container ${containerId} to exit` },
  );
}

export function runContract(name: string, setup: () => Promise<ContractTarget>): void {
  describe(`CRI contract: ${name}`, () => {
    let t: ContractTarget;
    let rt: Cri;
    let dir: string;

    before(async () => {
      t = await setup();
      rt = t.rt;
      dir = mkdtempSync(path.join(tmpdir(), 'cri-contract-'));
    });
    after(async () => {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    });

    /** A fresh pod: its sandbox config (with a real log directory) and its running sandbox id. */
    async function newPod(extra: CriInput<PodSandboxConfig> = {}): Promise<{ config: CriInput<PodSandboxConfig>; id: string }> {
      const n = ++seq;
      const logDirectory = path.join(dir, `pod-${n}`);
      mkdirSync(logDirectory);
      const config: CriInput<PodSandboxConfig> = {
        metadata: { name: `pod-${n}`, namespace: 'default', uid: `uid-${n}`, attempt: 0 },
        hostname: `pod-${n}`,
        logDirectory,
        labels: { app: 'contract', pod: `p${n}` },
        annotations: { 'note/one': 'x' },
        ...extra,
      };
      const { podSandboxId } = await rt.RunPodSandbox({ config });
      return { config, id: podSandboxId };
    }

    /** Creates a container (with a log file path whose directory exists). */
    async function newContainer(pod: { config: CriInput<PodSandboxConfig>; id: string }, name: string, config: CriInput<ContainerConfig> = {}): Promise<string> {
      mkdirSync(path.join(pod.config.logDirectory as string, name), { recursive: true });
      const { containerId } = await rt.CreateContainer({
        podSandboxId: pod.id,
        sandboxConfig: pod.config,
        config: { metadata: { name, attempt: 0 }, image: { image: 'busybox:1.36' }, logPath: `${name}/0.log`, ...config },
      });
      return containerId;
    }

    /** Runs a script as a container to completion; returns its status and log records. */
    async function runToExit(script: string, config: CriInput<ContainerConfig> = {}) {
      const pod = await newPod();
      const id = await newContainer(pod, 'main', { command: ['sh', '-c', script], ...config });
      await rt.StartContainer({ containerId: id });
      const status = await waitExited(rt, id);
      return { pod, id, status, log: readCriLog(status.logPath) };
    }

    describe('runtime', () => {
      it('answers Version and Status', async () => {
        const v = await rt.Version({ version: '0.1.0' });
        assert.equal(v.runtimeApiVersion, 'v1');
        assert.ok(v.runtimeName.length > 0);
        const s = await rt.Status({});
        const conditions = Object.fromEntries((s.status?.conditions ?? []).map((c) => [c.type, c.status]));
        assert.deepEqual(conditions, { RuntimeReady: true, NetworkReady: true });
      });
    });

    // Tests in a concurrent block use their own pods only.
    describe('sandboxes', { concurrency: true }, () => {
      it('runs a READY sandbox with an IP, echoing metadata, labels and annotations', async () => {
        const pod = await newPod();
        const { status } = await rt.PodSandboxStatus({ podSandboxId: pod.id });
        assert.ok(status);
        assert.match(status.id, /^[0-9a-f]{64}$/);
        assert.equal(status.state, 'SANDBOX_READY');
        assert.deepEqual(status.metadata, { name: pod.config.metadata?.name, namespace: 'default', uid: pod.config.metadata?.uid, attempt: 0 });
        assert.deepEqual(status.labels, pod.config.labels);
        assert.deepEqual(status.annotations, pod.config.annotations);
        assert.match(status.network?.ip ?? '', /^127\.77\.\d+\.\d+$/);
        assert.ok(BigInt(status.createdAt) > 0n);
        assert.equal(status.linux?.namespaces?.options?.network, 'POD');
      });

      it('gives each sandbox its own IP, and none to a hostNetwork sandbox', async () => {
        const a = await newPod();
        const b = await newPod();
        const host = await newPod({ linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } } });
        const ip = async (id: string) => (await rt.PodSandboxStatus({ podSandboxId: id })).status?.network?.ip;
        assert.notEqual(await ip(a.id), await ip(b.id));
        assert.equal(await ip(host.id), '');
        assert.equal((await rt.PodSandboxStatus({ podSandboxId: host.id })).status?.linux?.namespaces?.options?.network, 'NODE');
      });

      it('makes a new sandbox per call and refuses a name (<name>_<ns>_<uid>_<attempt>) still reserved', async () => {
        const pod = await newPod();
        await assert.rejects(rt.RunPodSandbox({ config: pod.config }), (e: unknown) => {
          assert.ok(isCriError(e, 'Unknown'), String(e));
          assert.match((e as Error).message, /failed to reserve sandbox name "pod-\d+_default_uid-\d+_0": name .* is reserved for "[0-9a-f]{64}"/);
          return true;
        });
        // The next attempt is a different name.
        const next = await rt.RunPodSandbox({ config: { ...pod.config, metadata: { ...pod.config.metadata, attempt: 1 } } });
        assert.notEqual(next.podSandboxId, pod.id);
        // Once removed, the name is free again.
        await rt.StopPodSandbox({ podSandboxId: pod.id });
        await rt.RemovePodSandbox({ podSandboxId: pod.id });
        const again = await rt.RunPodSandbox({ config: pod.config });
        assert.notEqual(again.podSandboxId, pod.id);
      });

      it('stops (idempotently) to NOTREADY without an IP, then removes (idempotently)', async () => {
        const pod = await newPod();
        await rt.StopPodSandbox({ podSandboxId: pod.id });
        await rt.StopPodSandbox({ podSandboxId: pod.id });
        const { status } = await rt.PodSandboxStatus({ podSandboxId: pod.id });
        assert.equal(status?.state, 'SANDBOX_NOTREADY');
        assert.equal(status?.network?.ip, '');
        await rt.RemovePodSandbox({ podSandboxId: pod.id });
        await rt.RemovePodSandbox({ podSandboxId: pod.id });
        await assert.rejects(rt.PodSandboxStatus({ podSandboxId: pod.id }), (e) => isCriError(e, 'NotFound'));
      });

      it('reports NotFound for unknown sandbox ids (and removes them without error)', async () => {
        const unknown = 'f'.repeat(64);
        await assert.rejects(rt.PodSandboxStatus({ podSandboxId: unknown }), (e) => isCriError(e, 'NotFound'));
        await assert.rejects(rt.StopPodSandbox({ podSandboxId: unknown }), (e) => isCriError(e, 'NotFound'));
        await rt.RemovePodSandbox({ podSandboxId: unknown });
      });

      it('lists sandboxes by id, state and label selector', async () => {
        const a = await newPod();
        const b = await newPod();
        await rt.StopPodSandbox({ podSandboxId: b.id });
        const byId = await rt.ListPodSandbox({ filter: { id: a.id } });
        assert.deepEqual(
          byId.items.map((s) => s.id),
          [a.id],
        );
        const ready = await rt.ListPodSandbox({ filter: { state: { state: 'SANDBOX_READY' }, labelSelector: { app: 'contract' } } });
        assert.ok(ready.items.some((s) => s.id === a.id));
        assert.ok(!ready.items.some((s) => s.id === b.id));
        const notReady = await rt.ListPodSandbox({ filter: { state: { state: 'SANDBOX_NOTREADY' } } });
        assert.ok(notReady.items.some((s) => s.id === b.id));
        const byLabel = await rt.ListPodSandbox({ filter: { labelSelector: { pod: b.config.labels?.['pod'] as string } } });
        assert.deepEqual(
          byLabel.items.map((s) => s.id),
          [b.id],
        );
      });
    });

    it("lists a pod's sandboxes and containers by the pod-uid label, oldest first, and forgets removed ones", async () => {
      const uid = `uid-label-${++seq}`;
      const labels = { 'io.kubernetes.pod.uid': uid, tier: 'web' };
      const first = await newPod({ labels, metadata: { name: `labelled-${seq}`, namespace: 'default', uid, attempt: 0 } });
      const other = await newPod();
      const second = await newPod({ labels, metadata: { name: `labelled-${seq}`, namespace: 'default', uid, attempt: 1 } });
      const c1 = await newContainer(first, 'a', { labels: { 'io.kubernetes.pod.uid': uid } });
      await newContainer(other, 'a', { labels: { 'io.kubernetes.pod.uid': 'someone-else' } });
      const c2 = await newContainer(second, 'b', { labels: { 'io.kubernetes.pod.uid': uid, role: 'x' } });
      const sandboxes = async (selector: Record<string, string>): Promise<string[]> => (await rt.ListPodSandbox({ filter: { labelSelector: selector } })).items.map((x) => x.id);
      const containers = async (selector: Record<string, string>): Promise<string[]> =>
        (await rt.ListContainers({ filter: { labelSelector: selector } })).containers.map((x) => x.id);
      assert.deepEqual(await sandboxes({ 'io.kubernetes.pod.uid': uid }), [first.id, second.id]);
      assert.deepEqual(await sandboxes({ 'io.kubernetes.pod.uid': uid, tier: 'web' }), [first.id, second.id]);
      assert.deepEqual(await sandboxes({ 'io.kubernetes.pod.uid': uid, tier: 'db' }), []);
      assert.deepEqual(await sandboxes({ 'io.kubernetes.pod.uid': 'nobody' }), []);
      assert.deepEqual(await containers({ 'io.kubernetes.pod.uid': uid }), [c1, c2]);
      assert.deepEqual(await containers({ 'io.kubernetes.pod.uid': uid, role: 'x' }), [c2]);
      const byState = await rt.ListContainers({ filter: { labelSelector: { 'io.kubernetes.pod.uid': uid }, podSandboxId: second.id } });
      assert.deepEqual(
        byState.containers.map((x) => x.id),
        [c2],
      );
      await rt.RemoveContainer({ containerId: c1 });
      assert.deepEqual(await containers({ 'io.kubernetes.pod.uid': uid }), [c2]);
      await rt.StopPodSandbox({ podSandboxId: second.id });
      await rt.RemovePodSandbox({ podSandboxId: second.id });
      assert.deepEqual(await sandboxes({ 'io.kubernetes.pod.uid': uid }), [first.id]);
      assert.deepEqual(await containers({ 'io.kubernetes.pod.uid': uid }), []);
      await rt.StopPodSandbox({ podSandboxId: first.id });
      await rt.RemovePodSandbox({ podSandboxId: first.id });
      assert.deepEqual(await sandboxes({ 'io.kubernetes.pod.uid': uid }), []);
    });

    describe('containers', { concurrency: true }, () => {
      it('goes CREATED → RUNNING → EXITED (137 on a stop with timeout 0) → removed', async () => {
        const pod = await newPod();
        const id = await newContainer(pod, 'app', { command: ['sleep', '1000'], labels: { role: 'app' }, annotations: { hash: 'abc' } });
        let { status } = await rt.ContainerStatus({ containerId: id });
        assert.equal(status?.state, 'CONTAINER_CREATED');
        assert.equal(status?.startedAt, '0');
        assert.deepEqual(status?.labels, { role: 'app' });
        assert.deepEqual(status?.annotations, { hash: 'abc' });
        assert.equal(status?.logPath, path.join(pod.config.logDirectory as string, 'app/0.log'));
        assert.equal(status?.image?.image, 'docker.io/library/busybox:1.36');
        assert.match(status?.imageRef ?? '', /^docker\.io\/library\/busybox@sha256:[0-9a-f]{64}$/);

        await rt.StartContainer({ containerId: id });
        ({ status } = await rt.ContainerStatus({ containerId: id }));
        assert.equal(status?.state, 'CONTAINER_RUNNING');
        assert.ok(BigInt(status?.startedAt ?? '0') >= BigInt(status?.createdAt ?? '0'));
        await assert.rejects(rt.StartContainer({ containerId: id }), (e) => isCriError(e, 'Unknown'));

        await rt.StopContainer({ containerId: id, timeout: '0' });
        ({ status } = await rt.ContainerStatus({ containerId: id }));
        assert.equal(status?.state, 'CONTAINER_EXITED');
        assert.equal(status?.exitCode, 137);
        assert.equal(status?.reason, 'Error');
        assert.ok(BigInt(status?.finishedAt ?? '0') >= BigInt(status?.startedAt ?? '0'));
        await rt.StopContainer({ containerId: id, timeout: '10' }); // already stopped: a no-op

        await rt.RemoveContainer({ containerId: id });
        await rt.RemoveContainer({ containerId: id });
        await assert.rejects(rt.ContainerStatus({ containerId: id }), (e) => isCriError(e, 'NotFound'));
      });

      it('refuses a container name (<name>_<pod>_<ns>_<uid>_<attempt>) still reserved in the pod', async () => {
        const pod = await newPod();
        await newContainer(pod, 'app', { command: ['true'] });
        await assert.rejects(newContainer(pod, 'app', { command: ['true'] }), (e: unknown) => {
          assert.ok(isCriError(e, 'Unknown'));
          assert.match((e as Error).message, /failed to reserve container name "app_pod-\d+_default_uid-\d+_0"/);
          return true;
        });
        await newContainer(pod, 'app', { command: ['true'], metadata: { name: 'app', attempt: 1 } });
      });

      it('reports NotFound for unknown container ids and an unknown sandbox', async () => {
        const unknown = 'e'.repeat(64);
        await assert.rejects(rt.ContainerStatus({ containerId: unknown }), (e) => isCriError(e, 'NotFound'));
        await assert.rejects(rt.StartContainer({ containerId: unknown }), (e) => isCriError(e, 'NotFound'));
        await assert.rejects(rt.StopContainer({ containerId: unknown, timeout: '1' }), (e) => isCriError(e, 'NotFound'));
        await rt.RemoveContainer({ containerId: unknown });
        await assert.rejects(rt.CreateContainer({ podSandboxId: unknown, config: { metadata: { name: 'x' }, image: { image: 'busybox' } } }), (e) => isCriError(e, 'NotFound'));
      });

      it('lists containers by sandbox, state, id and labels', async () => {
        const pod = await newPod();
        const running = await newContainer(pod, 'a', { command: ['sleep', 'infinity'], labels: { k: 'a' } });
        const created = await newContainer(pod, 'b', { command: ['true'], labels: { k: 'b' } });
        await rt.StartContainer({ containerId: running });
        const all = await rt.ListContainers({ filter: { podSandboxId: pod.id } });
        assert.deepEqual(new Set(all.containers.map((c) => c.id)), new Set([running, created]));
        const c = all.containers.find((x) => x.id === running);
        assert.equal(c?.podSandboxId, pod.id);
        assert.equal(c?.metadata?.name, 'a');
        assert.match(c?.imageRef ?? '', /^sha256:[0-9a-f]{64}$/);
        const runningOnly = await rt.ListContainers({ filter: { podSandboxId: pod.id, state: { state: 'CONTAINER_RUNNING' } } });
        assert.deepEqual(
          runningOnly.containers.map((x) => x.id),
          [running],
        );
        const createdOnly = await rt.ListContainers({ filter: { podSandboxId: pod.id, state: { state: 'CONTAINER_CREATED' } } });
        assert.deepEqual(
          createdOnly.containers.map((x) => x.id),
          [created],
        );
        const byLabel = await rt.ListContainers({ filter: { labelSelector: { k: 'b' }, id: created } });
        assert.deepEqual(
          byLabel.containers.map((x) => x.id),
          [created],
        );
        await rt.StopPodSandbox({ podSandboxId: pod.id });
      });

      it('lists an object again with its new state, the rest of it unchanged', async () => {
        const pod = await newPod();
        const id = await newContainer(pod, 'a', { command: ['sleep', 'infinity'], labels: { k: 'relisted' } });
        const listed = async () => (await rt.ListContainers({ filter: { podSandboxId: pod.id } })).containers.find((c) => c.id === id);
        const sandboxListed = async () => (await rt.ListPodSandbox({ filter: { id: pod.id } })).items[0];
        const created = await listed();
        assert.equal(created?.state, 'CONTAINER_CREATED');
        assert.equal((await sandboxListed())?.state, 'SANDBOX_READY');
        await rt.StartContainer({ containerId: id });
        const running = await listed();
        assert.deepEqual(running, { ...created, state: 'CONTAINER_RUNNING' });
        const sandboxReady = await sandboxListed();
        await rt.StopPodSandbox({ podSandboxId: pod.id });
        assert.deepEqual(await listed(), { ...created, state: 'CONTAINER_EXITED' });
        assert.deepEqual(await sandboxListed(), { ...sandboxReady, state: 'SANDBOX_NOTREADY' });
      });

      it('StopPodSandbox kills the running containers; RemovePodSandbox removes them', async () => {
        const pod = await newPod();
        const id = await newContainer(pod, 'app', { command: ['sh', '-c', "trap 'exit 0' TERM; sleep 1000 & wait"] });
        await rt.StartContainer({ containerId: id });
        await rt.StopPodSandbox({ podSandboxId: pod.id });
        const { status } = await rt.ContainerStatus({ containerId: id });
        assert.equal(status?.state, 'CONTAINER_EXITED');
        assert.equal(status?.exitCode, 137); // SIGKILL: no chance to run the trap
        await assert.rejects(newContainer(pod, 'late', { command: ['true'] }), (e) => isCriError(e, 'NotFound'));
        await rt.RemovePodSandbox({ podSandboxId: pod.id });
        await assert.rejects(rt.ContainerStatus({ containerId: id }), (e) => isCriError(e, 'NotFound'));
      });
    });

    describe('the simulated process', { concurrency: true }, () => {
      it('exits 0 (Completed), 1 and N (Error) for true, false and exit N', async () => {
        for (const [script, code, reason] of [
          ['true', 0, 'Completed'],
          ['false', 1, 'Error'],
          ['exit 7', 7, 'Error'],
        ] as const) {
          const { status } = await runToExit(script);
          assert.equal(status.exitCode, code, script);
          assert.equal(status.reason, reason, script);
        }
      });

      it('runs ; && || sequences and writes the CRI log format', async () => {
        const { status, log } = await runToExit('echo one && false || echo two; echo three >&2; false && echo never; exit 4');
        assert.equal(status.exitCode, 4);
        assert.deepEqual(
          log.map((r) => [r.stream, r.tag, r.text]),
          [
            ['stdout', 'F', 'one'],
            ['stdout', 'F', 'two'],
            ['stderr', 'F', 'three'],
          ],
        );
        const raw = readFileSync(status.logPath, 'utf8').split('\n')[0] as string;
        assert.match(raw, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z stdout F one$/);
      });

      it('runs argv directly (sleep 0.05 then exit) and honours args without a command', async () => {
        const pod = await newPod();
        const id = await newContainer(pod, 'c', { args: ['sh', '-c', 'sleep 0.05; echo "$GREETING world"'], envs: [{ key: 'GREETING', value: 'hello' }] });
        await rt.StartContainer({ containerId: id });
        const status = await waitExited(rt, id);
        assert.equal(status.exitCode, 0);
        assert.deepEqual(
          readCriLog(status.logPath).map((r) => r.text),
          ['hello world'],
        );
      });

      it('writes through a mount to the host directory, where another container reads it', async () => {
        const shared = mkdtempSync(path.join(dir, 'emptydir-'));
        const pod = await newPod();
        const mounts = [{ containerPath: '/work', hostPath: shared }];
        const init = await newContainer(pod, 'init', { command: ['sh', '-c', 'echo ready > /work/state && echo more >> /work/state && touch /work/flag'], mounts });
        await rt.StartContainer({ containerId: init });
        assert.equal((await waitExited(rt, init)).exitCode, 0);
        assert.equal(readFileSync(path.join(shared, 'state'), 'utf8'), 'ready\nmore\n');
        const main = await newContainer(pod, 'main', { command: ['sh', '-c', 'test -f /work/flag && cat /work/state && test -f /work/nope || echo no-nope'], mounts });
        await rt.StartContainer({ containerId: main });
        const status = await waitExited(rt, main);
        assert.equal(status.exitCode, 0);
        assert.deepEqual(
          readCriLog(status.logPath).map((r) => r.text),
          ['ready', 'more', 'no-nope'],
        );
      });

      it('refuses writes to a read-only mount like sh does', async () => {
        const ro = mkdtempSync(path.join(dir, 'ro-'));
        writeFileSync(path.join(ro, 'config'), 'v1\n');
        const { status, log } = await runToExit('cat /etc/app/config; echo x > /etc/app/config', {
          mounts: [{ containerPath: '/etc/app', hostPath: ro, readonly: true }],
        });
        assert.equal(status.exitCode, 1);
        assert.deepEqual(
          log.map((r) => r.text),
          ['v1', "sh: can't create /etc/app/config: Read-only file system"],
        );
        assert.equal(readFileSync(path.join(ro, 'config'), 'utf8'), 'v1\n');
      });

      it('mounts single files: writes reach the host file, reads see it, and ContainerStatus reports the mounts', async () => {
        const files = mkdtempSync(path.join(dir, 'files-'));
        const termLog = path.join(files, '0a1b2c3d');
        const hosts = path.join(files, 'etc-hosts');
        writeFileSync(termLog, '');
        writeFileSync(hosts, '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n');
        const mounts = [
          { containerPath: '/etc/hosts', hostPath: hosts },
          { containerPath: '/dev/termination-log', hostPath: termLog },
        ];
        const { status, log } = await runToExit(
          'cat /etc/hosts; echo "bye from c" > /dev/termination-log; echo more >> /dev/termination-log; test -f /dev/termination-log && exit 3',
          { mounts },
        );
        assert.equal(status.exitCode, 3);
        assert.deepEqual(
          log.map((r) => r.text),
          ['# Kubernetes-managed hosts file.', '127.0.0.1\tlocalhost'],
        );
        assert.equal(readFileSync(termLog, 'utf8'), 'bye from c\nmore\n');
        assert.deepEqual(
          status.mounts.map((m) => [m.containerPath, m.hostPath, m.readonly, m.propagation]),
          [
            ['/etc/hosts', hosts, false, 'PROPAGATION_PRIVATE'],
            ['/dev/termination-log', termLog, false, 'PROPAGATION_PRIVATE'],
          ],
        );
      });

      it('writes output without a final newline as a partial (P) record at exit, as containerd does', async () => {
        const { status, log } = await runToExit("echo whole; printf 'no newline'; printf 'err' >&2; exit 1");
        assert.equal(status.exitCode, 1);
        assert.deepEqual(
          log.map((r) => [r.stream, r.tag, r.text]),
          [
            ['stdout', 'F', 'whole'],
            ['stdout', 'P', 'no newline'],
            ['stderr', 'P', 'err'],
          ],
        );
      });

      it('on StopContainer: a TERM trap with wait exits at once; PID 1 without one ignores TERM until SIGKILL', async () => {
        const pod = await newPod();
        // The kubelet's mode: each container its own PID namespace, the command is PID 1.
        const own = { linux: { securityContext: { namespaceOptions: { pid: 'CONTAINER' as const } } } };
        const trapped = await newContainer(pod, 'trapped', { command: ['sh', '-c', "trap 'echo bye; exit 0' TERM; sleep 1000 & wait"], ...own });
        const plain = await newContainer(pod, 'plain', { command: ['sleep', '1000'], ...own });
        const foreground = await newContainer(pod, 'foreground', { command: ['sh', '-c', "trap 'exit 0' TERM; sleep 1000"], ...own });
        const ignored = await newContainer(pod, 'ignored', { command: ['sh', '-c', "trap '' TERM; sleep 1000 & wait"], ...own });
        const ids = [trapped, plain, foreground, ignored];
        for (const id of ids) await rt.StartContainer({ containerId: id });
        const started = Date.now();
        let trappedDoneAt = 0;
        await Promise.all(
          ids.map(async (id) => {
            await rt.StopContainer({ containerId: id, timeout: '1' });
            if (id === trapped) trappedDoneAt = Date.now();
          }),
        );
        const byId = async (id: string) => (await rt.ContainerStatus({ containerId: id })).status;
        const t = await byId(trapped);
        assert.deepEqual([t?.exitCode, t?.reason], [0, 'Completed']);
        assert.deepEqual(
          readCriLog(t?.logPath as string).map((r) => r.text),
          ['bye'],
        );
        assert.ok(trappedDoneAt - started < 900, `the trapped container stopped in ${trappedDoneAt - started} ms, before the 1 s timeout`);
        for (const id of [plain, foreground, ignored]) {
          const s = await byId(id);
          assert.deepEqual([s?.exitCode, s?.reason], [137, 'Error'], `container ${s?.metadata?.name}`);
        }
      });

      it('on StopContainer in the sandbox PID namespace (pid POD, the zero value): not PID 1, so an untrapped TERM ends it with 143', async () => {
        const pod = await newPod();
        // Each shell says `ready` once its trap is set: a TERM before that would end it either way.
        const trapped = await newContainer(pod, 'trapped', { command: ['sh', '-c', "trap 'exit 0' TERM; echo ready; sleep 1000 & wait"] });
        const plain = await newContainer(pod, 'plain', { command: ['sleep', '1000'] });
        const shell = await newContainer(pod, 'shell', { command: ['sh', '-c', 'echo ready; sleep 1000'] });
        const node = await newContainer(pod, 'node', { command: ['sleep', '1000'], linux: { securityContext: { namespaceOptions: { pid: 'NODE' } } } });
        const ignored = await newContainer(pod, 'ignored', { command: ['sh', '-c', "trap '' TERM; echo ready; sleep 1000 & wait"] });
        const foreground = await newContainer(pod, 'foreground', { command: ['sh', '-c', "trap 'exit 0' TERM; echo ready; sleep 1000"] });
        const ids = [trapped, plain, shell, node, ignored, foreground];
        for (const id of ids) await rt.StartContainer({ containerId: id });
        for (const id of [trapped, shell, ignored, foreground]) {
          const logPath = (await rt.ContainerStatus({ containerId: id })).status?.logPath as string;
          await eventually(async () => (readCriLog(logPath).some((r) => r.text === 'ready') ? true : undefined), { message: `${logPath} says ready` });
        }
        const started = Date.now();
        const took = new Map<string, number>();
        await Promise.all(
          ids.map(async (id) => {
            await rt.StopContainer({ containerId: id, timeout: '1' });
            took.set(id, Date.now() - started);
          }),
        );
        const result = async (id: string) => {
          const s = (await rt.ContainerStatus({ containerId: id })).status;
          return [s?.metadata?.name, s?.exitCode, s?.reason];
        };
        assert.deepEqual(await Promise.all(ids.map(result)), [
          ['trapped', 0, 'Completed'],
          ['plain', 143, 'Error'],
          ['shell', 143, 'Error'],
          ['node', 143, 'Error'],
          ['ignored', 137, 'Error'],
          ['foreground', 137, 'Error'],
        ]);
        for (const id of [trapped, plain, shell, node]) assert.ok((took.get(id) ?? 0) < 900, `stopped before the 1 s timeout: ${took.get(id)} ms`);
      });

      it('blocks until stopped when the container has neither command nor args', async () => {
        const pod = await newPod();
        const id = await newContainer(pod, 'idle');
        await rt.StartContainer({ containerId: id });
        assert.equal((await rt.ContainerStatus({ containerId: id })).status?.state, 'CONTAINER_RUNNING');
        await rt.StopContainer({ containerId: id, timeout: '30' });
        const { status } = await rt.ContainerStatus({ containerId: id });
        assert.deepEqual([status?.exitCode, status?.reason], [0, 'Completed']);
      });

      it('fails StartContainer like runc for an unknown executable (StartError, 128)', async () => {
        const pod = await newPod();
        const id = await newContainer(pod, 'bad', { command: ['no-such-binary', '--flag'] });
        await assert.rejects(rt.StartContainer({ containerId: id }), (e: unknown) => {
          assert.ok(isCriError(e, 'Unknown'), String(e));
          assert.match((e as Error).message, /exec: "no-such-binary": executable file not found in \$PATH/);
          return true;
        });
        const { status } = await rt.ContainerStatus({ containerId: id });
        assert.equal(status?.state, 'CONTAINER_EXITED');
        assert.equal(status?.exitCode, 128);
        assert.equal(status?.reason, 'StartError');
        assert.equal(status?.startedAt, '0');
        assert.match(status?.message ?? '', /OCI runtime create failed: .*executable file not found in \$PATH/);
      });

      it('fails StartContainer when the log directory does not exist, as containerd does', async () => {
        const pod = await newPod();
        const { containerId } = await rt.CreateContainer({
          podSandboxId: pod.id,
          sandboxConfig: pod.config,
          config: { metadata: { name: 'nolog' }, image: { image: 'busybox' }, command: ['true'], logPath: 'missing-dir/0.log' },
        });
        await assert.rejects(rt.StartContainer({ containerId }), (e) => isCriError(e, 'Unknown') && /failed to create and open log file/.test((e as Error).message));
        assert.equal((await rt.ContainerStatus({ containerId })).status?.reason, 'StartError');
      });

      it('runs ExecSync commands with exit code and output, in the container filesystem', async () => {
        const pod = await newPod();
        const id = await newContainer(pod, 'app', { command: ['sh', '-c', 'echo hi > /tmp/state; sleep infinity'] });
        await rt.StartContainer({ containerId: id });
        const r = await eventually(
          async () => {
            const out = await rt.ExecSync({ containerId: id, cmd: ['cat', '/tmp/state'], timeout: '5' });
            return out.exitCode === 0 ? out : undefined;
          },
          { message: 'the container to write /tmp/state' },
        );
        assert.equal(Buffer.from(r.stdout).toString(), 'hi\n');
        const failed = await rt.ExecSync({ containerId: id, cmd: ['sh', '-c', 'echo out; echo err >&2; exit 3'], timeout: '5' });
        assert.equal(failed.exitCode, 3);
        assert.equal(Buffer.from(failed.stdout).toString(), 'out\n');
        assert.equal(Buffer.from(failed.stderr).toString(), 'err\n');
        await assert.rejects(rt.ExecSync({ containerId: id, cmd: ['sleep', '10'], timeout: '1' }), (e) => isCriError(e, 'DeadlineExceeded'));
        await assert.rejects(
          rt.ExecSync({ containerId: id, cmd: ['nope'], timeout: '1' }),
          (e) => isCriError(e, 'Unknown') && /executable file not found/.test((e as Error).message),
        );
        await rt.StopContainer({ containerId: id, timeout: '0' });
        await assert.rejects(rt.ExecSync({ containerId: id, cmd: ['true'] }), (e) => isCriError(e, 'Unknown'));
      });
    });

    describe('images', { concurrency: true }, () => {
      it('reports present images normalized, and missing ones as absent (no error)', async () => {
        const { image } = await rt.ImageStatus({ image: { image: 'busybox' } });
        assert.ok(image);
        assert.match(image.id, /^sha256:[0-9a-f]{64}$/);
        assert.deepEqual(image.repoTags, ['docker.io/library/busybox:latest']);
        assert.ok(Number(image.size) > 0);
        assert.deepEqual((await rt.ImageStatus({ image: { image: image.id } })).image?.id, image.id);
        assert.equal((await rt.ImageStatus({ image: { image: 'registry.example.com/team/doesnotexist:v1' } })).image, null);
        assert.equal((await rt.ImageStatus({ image: { image: 'busybox:missing' } })).image, null);
      });

      it('pulls present images to their id and fails missing ones with NotFound like containerd', async () => {
        const { imageRef } = await rt.PullImage({ image: { image: 'nginx:1.27' }, auth: { username: 'u', password: 'p' } });
        assert.equal(imageRef, (await rt.ImageStatus({ image: { image: 'docker.io/library/nginx:1.27' } })).image?.id);
        await assert.rejects(rt.PullImage({ image: { image: 'doesnotexist' } }), (e: unknown) => {
          assert.ok(isCriError(e, 'NotFound'));
          assert.match((e as Error).message, /failed to pull and unpack image "docker\.io\/library\/doesnotexist:latest": .*not found/);
          return true;
        });
        const pod = await newPod();
        await assert.rejects(newContainer(pod, 'x', { image: { image: 'doesnotexist' } }), (e) => isCriError(e, 'NotFound'));
      });

      it('removes images until pulled again, and lists and sizes them', async () => {
        const ref = 'quay.io/org/tool:2';
        const { imageRef } = await rt.PullImage({ image: { image: ref } });
        assert.ok((await rt.ListImages({})).images.some((i) => i.id === imageRef));
        assert.deepEqual(
          (await rt.ListImages({ filter: { image: { image: ref } } })).images.map((i) => i.id),
          [imageRef],
        );
        await rt.RemoveImage({ image: { image: imageRef } });
        await rt.RemoveImage({ image: { image: imageRef } });
        assert.equal((await rt.ImageStatus({ image: { image: ref } })).image, null);
        assert.equal((await rt.PullImage({ image: { image: ref } })).imageRef, imageRef);
        const fs = await rt.ImageFsInfo({});
        assert.ok(Number(fs.imageFilesystems[0]?.usedBytes?.value) > 0);
        assert.ok((fs.imageFilesystems[0]?.fsId?.mountpoint ?? '').length > 0);
      });
    });

    // Sequential: these change the simulator's knobs, which the other tests share.
    describe('latency, failures and events', () => {
      it('fails an RPC as injected, `times` times, then recovers', async () => {
        t.sim.injectFailure('ListContainers', { code: 'UNAVAILABLE', message: 'runtime is restarting', times: 2 });
        for (let i = 0; i < 2; i++) {
          await assert.rejects(rt.ListContainers({}), (e: unknown) => {
            assert.ok(isCriError(e, 'Unavailable'));
            assert.equal((e as { retryable: boolean }).retryable, true);
            assert.match((e as Error).message, /runtime is restarting/);
            return true;
          });
        }
        await rt.ListContainers({});
        t.sim.injectFailure('Version', { code: 'ResourceExhausted' });
        await assert.rejects(rt.Version({}), (e) => isCriError(e, 'ResourceExhausted'));
        t.sim.clearFailures();
        await rt.Version({});
      });

      it('adds configured latency', async () => {
        t.sim.setLatency({ ImageFsInfo: 60 });
        const started = performance.now();
        await rt.ImageFsInfo({});
        const took = performance.now() - started;
        t.sim.setLatency({ ImageFsInfo: 0 });
        assert.ok(took >= 55, `took ${took} ms`);
      });

      it('streams container events as they happen', async () => {
        const abort = new AbortController();
        const stream = rt.GetContainerEvents({}, { signal: abort.signal });
        await stream.established;
        const pod = await newPod();
        const id = await newContainer(pod, 'ev', { command: ['sh', '-c', 'exit 0'] });
        await rt.StartContainer({ containerId: id });
        await waitExited(rt, id);
        await rt.RemoveContainer({ containerId: id });
        const seen: string[] = [];
        for await (const ev of stream) {
          if (ev.containerId === pod.id) {
            assert.equal(ev.podSandboxStatus?.id, pod.id);
            continue;
          }
          if (ev.containerId !== id) continue;
          seen.push(ev.containerEventType);
          assert.equal(ev.podSandboxStatus?.id, pod.id);
          if (ev.containerEventType === 'CONTAINER_STOPPED_EVENT') {
            assert.equal(ev.containersStatuses.find((c) => c.id === id)?.state, 'CONTAINER_EXITED');
          }
          if (ev.containerEventType === 'CONTAINER_DELETED_EVENT') break;
        }
        abort.abort();
        assert.deepEqual(seen, ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']);
      });
    });
  });
}
