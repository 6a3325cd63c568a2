/**
 * The kubelet-managed /etc/hosts: content (kubelet_pods_test.go TestManagedHostsFileContent and
 * TestNodeHostsFileContent cases), when a container gets it, and the file it writes.
 */
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeTempDir, type TempDir } from '@splitlet/testkit';
import { createNodeFiles } from '../src/adapters/node-files.js';
import { etcHostsPath, hostsEntriesFromHostAliases, makeHostsMount, managedHostsFileContent, nodeHostsFileContent, shouldMountHostsFile } from '../src/kuberuntime/hosts-file.js';
import { aPod } from './fixtures.js';

const LOCAL = [
  '# Kubernetes-managed hosts file.',
  '127.0.0.1\tlocalhost',
  '::1\tlocalhost ip6-localhost ip6-loopback',
  'fe00::0\tip6-localnet',
  'fe00::0\tip6-mcastprefix',
  'fe00::1\tip6-allnodes',
  'fe00::2\tip6-allrouters',
];
const lines = (...ls: string[]): string => `${ls.join('\n')}\n`;

describe('managedHostsFileContent', () => {
  const cases: Array<{ name: string; ips: string[]; hostname: string; domain: string; aliases: Array<{ ip: string; hostnames?: string[] }>; want: string }> = [
    { name: 'hostname only', ips: ['123.45.67.89'], hostname: 'podFoo', domain: '', aliases: [], want: lines(...LOCAL, '123.45.67.89\tpodFoo') },
    {
      name: 'hostname and domain',
      ips: ['203.0.113.1'],
      hostname: 'podFoo',
      domain: 'domainFoo',
      aliases: [],
      want: lines(...LOCAL, '203.0.113.1\tpodFoo.domainFoo\tpodFoo'),
    },
    {
      name: 'one alias',
      ips: ['203.0.113.1'],
      hostname: 'podFoo',
      domain: 'domainFoo',
      aliases: [{ ip: '123.45.67.89', hostnames: ['foo', 'bar', 'baz'] }],
      want: lines(...LOCAL, '203.0.113.1\tpodFoo.domainFoo\tpodFoo', '', '# Entries added by HostAliases.', '123.45.67.89\tfoo\tbar\tbaz'),
    },
    {
      name: 'several aliases',
      ips: ['203.0.113.1'],
      hostname: 'podFoo',
      domain: 'domainFoo',
      aliases: [
        { ip: '123.45.67.89', hostnames: ['foo', 'bar', 'baz'] },
        { ip: '456.78.90.123', hostnames: ['park', 'doo', 'boo'] },
      ],
      want: lines(...LOCAL, '203.0.113.1\tpodFoo.domainFoo\tpodFoo', '', '# Entries added by HostAliases.', '123.45.67.89\tfoo\tbar\tbaz', '456.78.90.123\tpark\tdoo\tboo'),
    },
    {
      name: 'dual-stack: one line per pod IP',
      ips: ['203.0.113.1', 'fd00::6'],
      hostname: 'podFoo',
      domain: 'domainFoo',
      aliases: [],
      want: lines(...LOCAL, '203.0.113.1\tpodFoo.domainFoo\tpodFoo', 'fd00::6\tpodFoo.domainFoo\tpodFoo'),
    },
    { name: 'dual-stack without a domain', ips: ['203.0.113.1', 'fd00::6'], hostname: 'p', domain: '', aliases: [], want: lines(...LOCAL, '203.0.113.1\tp', 'fd00::6\tp') },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.equal(managedHostsFileContent(c.ips, c.hostname, c.domain, c.aliases), c.want);
    });
  }

  it('adds nothing for no aliases and lists an alias without hostnames alone', () => {
    assert.equal(hostsEntriesFromHostAliases([]), '');
    assert.equal(hostsEntriesFromHostAliases([{ ip: '10.0.0.1' }]), '\n# Entries added by HostAliases.\n10.0.0.1\t\n');
  });
});

describe('nodeHostsFileContent (hostNetwork pods)', () => {
  const node = '127.0.0.1\tlocalhost\n127.0.1.1\tmy-node\n\n# a comment\n::1\tip6-localhost\n';
  it('is the node file under the host-network header', () => {
    assert.equal(nodeHostsFileContent(Buffer.from(node), []).toString(), `# Kubernetes-managed hosts file (host network).\n${node}`);
  });
  it('appends the host aliases', () => {
    assert.equal(
      nodeHostsFileContent(Buffer.from(node), [{ ip: '10.1.2.3', hostnames: ['a.example', 'b'] }]).toString(),
      `# Kubernetes-managed hosts file (host network).\n${node}\n# Entries added by HostAliases.\n10.1.2.3\ta.example\tb\n`,
    );
  });
});

describe('shouldMountHostsFile', () => {
  const c = { name: 'main', image: 'busybox' };
  it('mounts when the pod has IPs', () => {
    assert.equal(shouldMountHostsFile(c, ['10.88.0.5']), true);
  });
  it('does not mount without pod IPs (the sandbox has none yet)', () => {
    assert.equal(shouldMountHostsFile(c, []), false);
  });
  it('does not mount over a container that mounts /etc/hosts itself', () => {
    assert.equal(shouldMountHostsFile({ ...c, volumeMounts: [{ name: 'v', mountPath: '/etc/hosts' }] }, ['10.88.0.5']), false);
    assert.equal(shouldMountHostsFile({ ...c, volumeMounts: [{ name: 'v', mountPath: '/etc' }] }, ['10.88.0.5']), true, 'only the exact path counts');
  });
});

describe('makeHostsMount', () => {
  let dir: TempDir;
  before(async () => {
    dir = await makeTempDir('hosts-file-');
  });
  after(async () => {
    await dir.cleanup();
  });

  it('writes <podDir>/etc-hosts with mode 0644 whatever the umask and mounts it read-write at /etc/hosts', async () => {
    const pod = aPod({ spec: { hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo.local', 'bar'] }] } });
    const old = process.umask(0o077);
    let mount;
    try {
      mount = await makeHostsMount(createNodeFiles(''), { pod, podDir: dir.path, podIPs: ['10.88.0.7'], hostname: 'web', domain: 'sub.default.svc.cluster.local' });
    } finally {
      process.umask(old);
    }
    const path = join(dir.path, 'etc-hosts');
    assert.equal(etcHostsPath(dir.path), path);
    assert.deepEqual(mount, { containerPath: '/etc/hosts', hostPath: path, readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' });
    assert.equal((await stat(path)).mode & 0o777, 0o644);
    assert.equal(
      await readFile(path, 'utf8'),
      lines(...LOCAL, '10.88.0.7\tweb.sub.default.svc.cluster.local\tweb', '', '# Entries added by HostAliases.', '10.1.2.3\tfoo.local\tbar'),
    );
  });

  it('rewrites the file each time, from the node hosts file for a hostNetwork pod', async () => {
    const files = { ...createNodeFiles(''), readNodeHostsFile: async () => Buffer.from('127.0.0.1\tlocalhost\n192.168.1.5\tnode-a\n') };
    const pod = aPod({ spec: { hostNetwork: true } });
    await makeHostsMount(files, { pod, podDir: dir.path, podIPs: ['192.168.1.5'], hostname: 'web', domain: '' });
    assert.equal(await readFile(join(dir.path, 'etc-hosts'), 'utf8'), '# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n192.168.1.5\tnode-a\n');
  });

  it('fails with the Go error text when the node hosts file cannot be read', async () => {
    const files = { ...createNodeFiles(''), readNodeHostsFile: () => createNodeFiles('').readAtMost(join(dir.path, 'no-such-hosts'), 10) };
    await assert.rejects(makeHostsMount(files, { pod: aPod({ spec: { hostNetwork: true } }), podDir: dir.path, podIPs: ['192.168.1.5'], hostname: 'web', domain: '' }), {
      message: `open ${join(dir.path, 'no-such-hosts')}: no such file or directory`,
    });
  });
});
