import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashContainer } from '@splitlet/kube';
import {
  ContainerConfigError,
  containerOomScoreAdjust,
  generateContainerConfig,
  linuxContainerResources,
  makeMounts,
  milliCpuToQuota,
  milliCpuToShares,
  verifyRunAsNonRoot,
} from '../src/kuberuntime/container-config.js';
import { containerInfoFrom } from '../src/kuberuntime/labels.js';
import { aPod } from './fixtures.js';

const env = { podIP: '10.0.0.5', podIPs: ['10.0.0.5'], hostIPs: [], nodeAllocatable: { milliCpu: 2000, memoryBytes: 8 * 1024 ** 3 } };

describe('cpu shares and quota', () => {
  for (const [milli, shares] of [
    [0, 2],
    [1, 2],
    [100, 102],
    [250, 256],
    [1000, 1024],
    [300_000, 262_144],
  ] as const) {
    it(`${milli}m → ${shares} shares`, () => assert.equal(milliCpuToShares(milli), shares));
  }
  for (const [milli, quota] of [
    [0, 0],
    [5, 1000],
    [250, 25_000],
    [1500, 150_000],
  ] as const) {
    it(`${milli}m → quota ${quota}`, () => assert.equal(milliCpuToQuota(milli), quota));
  }
});

describe('linuxContainerResources', () => {
  it('shares from the request, quota and memory from the limits', () => {
    const pod = aPod({ containers: [{ name: 'c', image: 'x', resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '500m', memory: '128Mi' } } }] });
    const c = pod.spec.containers[0]!;
    assert.deepEqual(linuxContainerResources(pod, c, 1024 ** 3), {
      cpuShares: '256',
      cpuPeriod: '100000',
      cpuQuota: '50000',
      memoryLimitInBytes: String(128 * 1024 * 1024),
      oomScoreAdj: String(1000 - Math.floor((1000 * 64 * 1024 * 1024) / 1024 ** 3)),
    });
  });
  it('shares from the limit when only a limit is set; minimal shares without', () => {
    const pod = aPod({ containers: [{ name: 'c', image: 'x', resources: { limits: { cpu: '1' } } }] });
    assert.equal(linuxContainerResources(pod, pod.spec.containers[0]!, 1).cpuShares, '1024');
    const be = aPod();
    const r = linuxContainerResources(be, be.spec.containers[0]!, 1);
    assert.equal(r.cpuShares, '2');
    assert.equal(r.cpuQuota, '0');
    assert.equal(r.memoryLimitInBytes, undefined);
    assert.equal(r.oomScoreAdj, '1000');
  });
  it('OOM score: guaranteed -997', () => {
    const g = aPod({ containers: [{ name: 'c', image: 'x', resources: { limits: { cpu: '1', memory: '1Gi' } } }] });
    assert.equal(containerOomScoreAdjust(g, g.spec.containers[0]!, 8 * 1024 ** 3), -997);
  });
});

describe('makeMounts', () => {
  it('maps volume mounts to host paths, subPath and read-only', () => {
    const mounts = makeMounts(
      {
        name: 'c',
        volumeMounts: [
          { name: 'data', mountPath: '/data' },
          { name: 'cfg', mountPath: '/etc/cfg', subPath: 'app', readOnly: true, mountPropagation: 'HostToContainer' },
        ],
      },
      { data: { hostPath: '/pods/u/volumes/data' }, cfg: { hostPath: '/pods/u/volumes/cfg', readOnly: false } },
    );
    assert.deepEqual(mounts, [
      { containerPath: '/data', hostPath: '/pods/u/volumes/data', readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' },
      { containerPath: '/etc/cfg', hostPath: '/pods/u/volumes/cfg/app', readonly: true, selinuxRelabel: false, propagation: 'PROPAGATION_HOST_TO_CONTAINER' },
    ]);
  });
  it('an undefined volume is a clear error', () => {
    assert.throws(
      () => makeMounts({ name: 'c', volumeMounts: [{ name: 'nope', mountPath: '/x' }] }, {}),
      (e: unknown) => e instanceof ContainerConfigError && e.message === 'cannot find volume "nope" to mount into container "c"',
    );
  });
  it('a subPath may not escape the volume', () => {
    assert.throws(() => makeMounts({ name: 'c', volumeMounts: [{ name: 'v', mountPath: '/x', subPath: '../../etc' }] }, { v: { hostPath: '/v' } }), /must be a relative path/);
  });
});

describe('verifyRunAsNonRoot', () => {
  const pod = aPod({ spec: { securityContext: { runAsNonRoot: true } } });
  it('refuses root', () => {
    assert.throws(() => verifyRunAsNonRoot(pod, { name: 'c', securityContext: { runAsUser: 0 } }, {}), /runAsUser breaks non-root policy/);
    assert.throws(() => verifyRunAsNonRoot(pod, { name: 'c' }, { uid: 0 }), /image will run as root/);
    assert.throws(() => verifyRunAsNonRoot(pod, { name: 'c' }, { username: 'nginx' }), /non-numeric user \(nginx\)/);
  });
  it('accepts a non-root user', () => {
    verifyRunAsNonRoot(pod, { name: 'c' }, { uid: 1000 });
    verifyRunAsNonRoot(pod, { name: 'c', securityContext: { runAsUser: 1000 } }, { uid: 0 });
  });
});

describe('generateContainerConfig', () => {
  it('fills metadata, image, expanded command, env, labels, annotations, log path and security context', () => {
    const container = {
      name: 'app',
      image: 'busybox:1.36',
      command: ['sh', '-c', 'echo $(GREETING) from $(POD)'],
      env: [
        { name: 'GREETING', value: 'hello' },
        { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      ],
      workingDir: '/work',
      securityContext: { privileged: false, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsUser: 1000, capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] } },
      lifecycle: { preStop: { exec: { command: ['sleep', '1'] } } },
    };
    const pod = aPod({ name: 'web', uid: 'u-9', containers: [container], metadata: { labels: { app: 'web' } } });
    const cfg = generateContainerConfig({ pod, container, isInit: false, restartCount: 3, imageRef: 'sha256:abc', volumes: {}, env, memoryCapacityBytes: 1024 ** 3 });
    assert.deepEqual(cfg.metadata, { name: 'app', attempt: 3 });
    assert.deepEqual(cfg.image, { image: 'sha256:abc', userSpecifiedImage: 'busybox:1.36' });
    assert.deepEqual(cfg.command, ['sh', '-c', 'echo hello from web']);
    assert.deepEqual(cfg.envs, [
      { key: 'GREETING', value: 'hello' },
      { key: 'POD', value: 'web' },
    ]);
    assert.equal(cfg.workingDir, '/work');
    assert.equal(cfg.logPath, 'app/3.log');
    assert.deepEqual(cfg.labels, {
      'io.kubernetes.pod.name': 'web',
      'io.kubernetes.pod.namespace': 'default',
      'io.kubernetes.pod.uid': 'u-9',
      'io.kubernetes.container.name': 'app',
    });
    assert.equal(cfg.annotations?.['io.kubernetes.container.hash'], hashContainer(container));
    assert.equal(cfg.annotations?.['io.kubernetes.container.restartCount'], '3');
    assert.equal(cfg.annotations?.['io.kubernetes.container.terminationMessagePath'], '/dev/termination-log');
    assert.equal(cfg.annotations?.['io.kubernetes.pod.terminationGracePeriod'], '30');
    assert.equal(cfg.annotations?.['io.kubernetes.container.init'], undefined);
    const sc = cfg.linux?.securityContext;
    assert.equal(sc?.noNewPrivs, true);
    assert.equal(sc?.readonlyRootfs, true);
    assert.equal(sc?.privileged, false);
    assert.deepEqual(sc?.runAsUser, { value: '1000' });
    assert.deepEqual(sc?.capabilities, { addCapabilities: ['NET_ADMIN'], dropCapabilities: ['ALL'] });
    assert.ok((sc?.maskedPaths ?? []).includes('/proc/kcore'));

    const info = containerInfoFrom(cfg.labels ?? {}, (cfg.annotations ?? {}) as Record<string, string>);
    assert.equal(info.restartCount, 3);
    assert.equal(info.podTerminationGracePeriod, 30);
    assert.deepEqual(info.preStop, { exec: { command: ['sleep', '1'] } });
  });
  it('gives each container its own PID namespace (CONTAINER) unless the pod shares one; NODE for the host namespaces', () => {
    const ns = (spec: Record<string, unknown>) => {
      const c = { name: 'c', image: 'busybox:1.36' };
      const cfg = generateContainerConfig({
        pod: aPod({ containers: [c], spec }),
        container: c,
        isInit: false,
        restartCount: 0,
        imageRef: 'sha256:x',
        volumes: {},
        env,
        memoryCapacityBytes: 1,
      });
      const o = cfg.linux?.securityContext?.namespaceOptions;
      return [o?.network, o?.pid, o?.ipc];
    };
    // The kubelet's default: the command is PID 1 of its container (sleep ignores SIGTERM there).
    assert.deepEqual(ns({}), ['POD', 'CONTAINER', 'POD']);
    assert.deepEqual(ns({ shareProcessNamespace: true }), ['POD', 'POD', 'POD']);
    assert.deepEqual(ns({ hostPID: true }), ['POD', 'NODE', 'POD']);
    assert.deepEqual(ns({ hostPID: true, shareProcessNamespace: true }), ['POD', 'NODE', 'POD']);
    assert.deepEqual(ns({ hostNetwork: true }), ['NODE', 'CONTAINER', 'POD']);
    assert.deepEqual(ns({ hostIPC: true }), ['POD', 'CONTAINER', 'NODE']);
  });
  it('marks init containers', () => {
    const c = { name: 'init', image: 'busybox' };
    const cfg = generateContainerConfig({
      pod: aPod({ spec: { initContainers: [c] } }),
      container: c,
      isInit: true,
      restartCount: 0,
      imageRef: 'sha256:x',
      volumes: {},
      env,
      memoryCapacityBytes: 1,
    });
    assert.equal(cfg.annotations?.['io.kubernetes.container.init'], 'true');
    assert.equal(cfg.logPath, 'init/0.log');
  });
});
