import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseResolvConf, podDnsConfig } from '../src/kuberuntime/dns.js';
import { generatePodSandboxConfig, podCgroupParent, podHostnameAndDomain } from '../src/kuberuntime/sandbox-config.js';
import { aPod } from './fixtures.js';

const hostDns = parseResolvConf('# comment\nnameserver 1.1.1.1\nnameserver 8.8.8.8\nsearch example.com. corp.example.com\noptions edns0 ndots:2\n');
const settings = { podLogDir: '/var/log/pods', dns: { clusterDns: [], clusterDomain: '', hasResolvConf: true } };

describe('parseResolvConf', () => {
  it('reads nameservers, the search list (trailing dots trimmed) and options', () => {
    assert.deepEqual(hostDns, { servers: ['1.1.1.1', '8.8.8.8'], searches: ['example.com', 'corp.example.com'], options: ['edns0', 'ndots:2'] });
  });
});

describe('podDnsConfig', () => {
  it('Default policy uses the host resolver', () => {
    const { config, warnings } = podDnsConfig(aPod({ spec: { dnsPolicy: 'Default' } }), hostDns, settings.dns);
    assert.deepEqual(config, { servers: ['1.1.1.1', '8.8.8.8'], searches: ['example.com', 'corp.example.com'], options: ['edns0', 'ndots:2'] });
    assert.deepEqual(warnings, []);
  });
  it('ClusterFirst uses the cluster DNS with cluster search domains first and ndots:5', () => {
    const { config } = podDnsConfig(aPod({ namespace: 'team' }), hostDns, { clusterDns: ['10.96.0.10'], clusterDomain: 'cluster.local', hasResolvConf: true });
    assert.deepEqual(config, {
      servers: ['10.96.0.10'],
      searches: ['team.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'example.com', 'corp.example.com'],
      options: ['ndots:5'],
    });
  });
  it('ClusterFirst without cluster DNS falls back to the host with MissingClusterDNS', () => {
    const { config, warnings } = podDnsConfig(aPod(), hostDns, settings.dns);
    assert.deepEqual(config.servers, ['1.1.1.1', '8.8.8.8']);
    assert.equal(warnings[0]?.reason, 'MissingClusterDNS');
    assert.match(warnings[0]?.message ?? '', /Falling back to "Default" policy/);
  });
  it('ClusterFirst on hostNetwork behaves as Default; None starts empty and takes dnsConfig', () => {
    assert.deepEqual(podDnsConfig(aPod({ spec: { hostNetwork: true } }), hostDns, { clusterDns: ['10.96.0.10'], clusterDomain: 'c', hasResolvConf: true }).config.servers, [
      '1.1.1.1',
      '8.8.8.8',
    ]);
    const none = aPod({ spec: { dnsPolicy: 'None' } }) as ReturnType<typeof aPod> & { spec: { dnsConfig?: unknown } };
    none.spec.dnsConfig = { nameservers: ['9.9.9.9'], searches: ['a.b'], options: [{ name: 'ndots', value: '1' }] };
    assert.deepEqual(podDnsConfig(none, hostDns, settings.dns).config, { servers: ['9.9.9.9'], searches: ['a.b'], options: ['ndots:1'] });
  });
  it('an empty resolver config means 127.0.0.1 and search "."', () => {
    assert.deepEqual(podDnsConfig(aPod({ spec: { dnsPolicy: 'Default' } }), parseResolvConf(''), { clusterDns: [], clusterDomain: '', hasResolvConf: false }).config, {
      servers: ['127.0.0.1'],
      searches: ['.'],
      options: [],
    });
  });
});

describe('podCgroupParent', () => {
  const besteffort = aPod({ uid: '1234-abcd' });
  const guaranteed = aPod({ uid: 'g-1', containers: [{ name: 'c', image: 'x', resources: { limits: { cpu: '1', memory: '1Gi' } } }] });
  const burstable = aPod({ uid: 'b-1', containers: [{ name: 'c', image: 'x', resources: { requests: { cpu: '100m' } } }] });
  it('cgroupfs paths by QoS', () => {
    assert.equal(podCgroupParent(besteffort, '/kubepods'), '/kubepods/besteffort/pod1234-abcd');
    assert.equal(podCgroupParent(burstable, '/kubepods/'), '/kubepods/burstable/podb-1');
    assert.equal(podCgroupParent(guaranteed, 'kubepods'), '/kubepods/podg-1');
  });
  it('systemd slices for a .slice base', () => {
    assert.equal(podCgroupParent(besteffort, 'kubepods.slice'), '/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234_abcd.slice');
    assert.equal(podCgroupParent(guaranteed, 'kubepods.slice'), '/kubepods.slice/kubepods-podg_1.slice');
  });
});

describe('podHostnameAndDomain', () => {
  it('uses spec.hostname and subdomain, truncates long names', () => {
    assert.deepEqual(podHostnameAndDomain(aPod({ spec: { hostname: 'h1', subdomain: 'sub' } }), 'cluster.local'), { hostname: 'h1', domain: 'sub.default.svc.cluster.local' });
    const long = `${'a'.repeat(62)}-b`;
    assert.equal(podHostnameAndDomain(aPod({ name: long }), '').hostname, 'a'.repeat(62));
    assert.throws(() => podHostnameAndDomain(aPod({ spec: { hostname: 'Bad_Name' } }), ''), /is not a valid DNS label/);
  });
});

describe('generatePodSandboxConfig', () => {
  it('builds metadata, labels, annotations, log dir, ports, namespaces, sysctls and cgroup', () => {
    const pod = aPod({
      name: 'web',
      uid: 'u-1',
      metadata: { labels: { app: 'web', 'io.kubernetes.pod.name': 'spoofed' }, annotations: { note: 'x' } },
      containers: [
        {
          name: 'c',
          image: 'nginx',
          ports: [
            { containerPort: 80, hostPort: 8080 },
            { containerPort: 53, protocol: 'UDP' },
          ],
        },
      ],
      spec: { hostPID: true, securityContext: { sysctls: [{ name: 'net.core.somaxconn', value: '1024' }], runAsUser: 1000 } },
    });
    const { config } = generatePodSandboxConfig(pod, 2, { ...settings, cgroupParent: '/kubepods' }, hostDns);
    assert.deepEqual(config.metadata, { name: 'web', namespace: 'default', uid: 'u-1', attempt: 2 });
    assert.deepEqual(config.labels, { app: 'web', 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': 'u-1' });
    assert.deepEqual(config.annotations, { note: 'x' });
    assert.equal(config.hostname, 'web');
    assert.equal(config.logDirectory, '/var/log/pods/default_web_u-1');
    assert.deepEqual(config.portMappings, [
      { containerPort: 80, hostPort: 8080, hostIp: '', protocol: 'TCP' },
      { containerPort: 53, hostPort: 0, hostIp: '', protocol: 'UDP' },
    ]);
    assert.equal(config.linux?.cgroupParent, '/kubepods/besteffort/podu-1');
    assert.deepEqual(config.linux?.sysctls, { 'net.core.somaxconn': '1024' });
    assert.deepEqual(config.linux?.securityContext?.namespaceOptions, { network: 'POD', pid: 'NODE', ipc: 'POD', targetId: '' });
    assert.deepEqual(config.linux?.securityContext?.runAsUser, { value: '1000' });
  });
  it('hostNetwork pods get no hostname and the NODE network namespace; no cgroup without a base', () => {
    const { config } = generatePodSandboxConfig(aPod({ spec: { hostNetwork: true } }), 0, settings, hostDns);
    assert.equal(config.hostname, undefined);
    assert.equal(config.linux?.securityContext?.namespaceOptions?.network, 'NODE');
    assert.equal(config.linux?.cgroupParent, '');
  });
});
