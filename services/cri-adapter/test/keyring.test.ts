/**
 * The docker keyring: parsing docker config files and pull secrets, and matching images against
 * registry keys. Cases ported from pkg/credentialprovider/keyring_test.go (TestUrlsMatch,
 * TestDockerKeyringForGlob, TestKeyringMiss, TestKeyringMissWithDockerHubCredentials,
 * TestKeyringHitWithUnqualified(Library)DockerHub, TestKeyringHitWithQualifiedDockerHub,
 * TestIsDefaultRegistryMatch), config_test.go and secrets_test.go.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeDockerConfigFieldAuth, readDockercfg, readDockerConfigJson } from '../src/credentials/docker-config.js';
import { BasicDockerKeyring, isDefaultRegistryMatch, registryKey, unionDockerKeyring, urlsMatch } from '../src/credentials/keyring.js';
import { makeDockerKeyring } from '../src/credentials/pull-secrets.js';
import { parseImageName } from '../src/images/image-reference.js';
import { isKubeletErrorWithCode } from './credential-helpers.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** A keyring of one dockercfg entry `{glob: {email, auth: foo:bar}}`, as keyring_test.go builds them. */
function keyringFor(glob: string, user = 'foo', password = 'bar'): BasicDockerKeyring {
  const k = new BasicDockerKeyring();
  k.add(readDockercfg(JSON.stringify({ [glob]: { email: 'foo@bar.baz', auth: b64(`${user}:${password}`) } })), 'test');
  return k;
}

describe('urlsMatch (TestUrlsMatch)', () => {
  const cases: [glob: string, target: string, match: boolean][] = [
    // match when there is no path component
    ['*.kubernetes.io', 'prefix.kubernetes.io', true],
    ['prefix.*.io', 'prefix.kubernetes.io', true],
    ['prefix.kubernetes.*', 'prefix.kubernetes.io', true],
    ['*-good.kubernetes.io', 'prefix-good.kubernetes.io', true],
    // match with path components
    ['*.kubernetes.io/blah', 'prefix.kubernetes.io/blah', true],
    ['prefix.*.io/foo', 'prefix.kubernetes.io/foo/bar', true],
    // match with path components and ports
    ['*.kubernetes.io:1111/blah', 'prefix.kubernetes.io:1111/blah', true],
    ['prefix.*.io:1111/foo', 'prefix.kubernetes.io:1111/foo/bar', true],
    // no match when number of parts mismatch
    ['*.kubernetes.io', 'kubernetes.io', false],
    ['*.*.kubernetes.io', 'prefix.kubernetes.io', false],
    ['*.*.kubernetes.io', 'kubernetes.io', false],
    // no match when some parts mismatch
    ['kubernetes.io', 'kubernetes.com', false],
    ['k*.io', 'quay.io', false],
    // no match when ports mismatch
    ['*.kubernetes.io:1234/blah', 'prefix.kubernetes.io:1111/blah', false],
    ['prefix.*.io/foo', 'prefix.kubernetes.io:1111/foo/bar', false],
    // glob classes and escapes (path/filepath.Match), and a malformed glob never matches
    ['registry-[0-9].example.com', 'registry-1.example.com', true],
    ['registry-[^0-9].example.com', 'registry-1.example.com', false],
    ['r[a-f]g.example.com', 'reg.example.com', true],
    // `?` starts the URL query (Go's url.Parse), so it never acts as a glob in a registry key
    ['r?g.example.com', 'reg.example.com', false],
    ['reg[.example.com', 'reg[.example.com', false],
    // the path is a plain string prefix
    ['quay.io/team', 'quay.io/teammate/app', true],
    ['quay.io/team/', 'quay.io/teammate/app', false],
    // loopback registries with ports
    ['127.0.0.1:5000', '127.0.0.1:5000/private/busybox', true],
    ['127.0.0.1', '127.0.0.1:5000/private/busybox', false],
    ['127.0.0.1:5000/private', '127.0.0.1:5000/public/busybox', false],
    ['[::1]:5000', '[::1]:5000/app', true],
  ];
  for (const [glob, target, match] of cases) {
    it(`${glob} ${match ? 'matches' : 'does not match'} ${target}`, () => assert.equal(urlsMatch(glob, target), match));
  }
});

describe('BasicDockerKeyring.lookup', () => {
  describe('hits (TestDockerKeyringForGlob)', () => {
    const cases: [glob: string, target: string][] = [
      ['https://hello.kubernetes.io', 'hello.kubernetes.io'],
      ['https://*.docker.io', 'prefix.docker.io'],
      ['https://prefix.*.io', 'prefix.docker.io'],
      ['https://prefix.docker.*', 'prefix.docker.io'],
      ['https://*.docker.io/path', 'prefix.docker.io/path'],
      ['https://prefix.*.io/path', 'prefix.docker.io/path/subpath'],
      ['https://prefix.docker.*/path', 'prefix.docker.io/path'],
      ['https://*.docker.io:8888', 'prefix.docker.io:8888'],
      ['https://prefix.*.io:8888', 'prefix.docker.io:8888'],
      ['https://prefix.docker.*:8888', 'prefix.docker.io:8888'],
      ['https://*.docker.io/path:1111', 'prefix.docker.io/path:1111'],
      ['https://*.docker.io/v1/', 'prefix.docker.io/path:1111'],
      ['https://*.docker.io/v2/', 'prefix.docker.io/path:1111'],
      ['https://prefix.docker.*/path:1111', 'prefix.docker.io/path:1111'],
      ['prefix.docker.io:1111', 'prefix.docker.io:1111/path'],
      ['*.docker.io:1111', 'prefix.docker.io:1111/path'],
      ['http://127.0.0.1:5000', '127.0.0.1:5000/private'],
    ];
    for (const [glob, target] of cases) {
      it(`${glob} → ${target}/foo/bar`, () => {
        const creds = keyringFor(glob).lookup(`${target}/foo/bar`);
        assert.equal(creds.length, 1);
        assert.deepEqual({ u: creds[0]?.username, p: creds[0]?.password, e: creds[0]?.email }, { u: 'foo', p: 'bar', e: 'foo@bar.baz' });
      });
    }
  });

  describe('misses (TestKeyringMiss)', () => {
    const cases: [glob: string, lookup: string][] = [
      ['https://hello.kubernetes.io', 'world.mesos.org/foo/bar'],
      ['https://*.docker.com', 'prefix.docker.io'],
      ['https://suffix.*.io', 'prefix.docker.io'],
      ['https://prefix.docker.c*', 'prefix.docker.io'],
      ['https://prefix.*.io/path:1111', 'prefix.docker.io/path/subpath:1111'],
      ['suffix.*.io', 'prefix.docker.io'],
    ];
    for (const [glob, lookup] of cases) {
      it(`${glob} ✗ ${lookup}/foo/bar`, () => assert.deepEqual(keyringFor(glob).lookup(`${lookup}/foo/bar`), []));
    }
  });

  describe('Docker Hub', () => {
    const hub = keyringFor('https://index.docker.io/v1/');
    it('Docker Hub credentials do not match another registry (TestKeyringMissWithDockerHubCredentials)', () => {
      assert.deepEqual(hub.lookup('world.mesos.org/foo/bar'), []);
    });
    for (const image of ['google/docker-registry', 'jenkins', 'index.docker.io/google/docker-registry', 'docker.io/library/busybox']) {
      it(`Docker Hub credentials match ${image} (TestKeyringHitWith…DockerHub)`, () => {
        const creds = hub.lookup(image);
        assert.equal(creds.length, 1);
        assert.equal(creds[0]?.username, 'foo');
      });
    }
    it('an image reference is looked up by its normalized repository: busybox:1.36 → docker.io/library/busybox', () => {
      assert.equal(parseImageName('busybox:1.36').repository, 'docker.io/library/busybox');
      assert.equal(hub.lookup(parseImageName('busybox:1.36').repository).length, 1);
    });
    it('a `docker.io` key matches docker.io images directly; registry-1.docker.io is just another host', () => {
      assert.equal(keyringFor('docker.io').lookup('docker.io/library/busybox').length, 1);
      assert.deepEqual(keyringFor('registry-1.docker.io').lookup('docker.io/library/busybox'), []);
    });
  });

  it('isDefaultRegistryMatch (TestIsDefaultRegistryMatch)', () => {
    const samples: [string, boolean][] = [
      ['foo/bar', true],
      ['docker.io/foo/bar', true],
      ['index.docker.io/foo/bar', true],
      ['foo', true],
      ['', false],
      ['registry.tld/foo/bar', false],
      ['registry:5000/foo/bar', false],
      ['myhostdocker.io/foo/bar', false],
    ];
    for (const [image, want] of samples) assert.equal(isDefaultRegistryMatch(image), want, image);
  });

  it('normalizes registry keys: scheme stripped, /v1/ and /v2/ mean the host', () => {
    assert.equal(registryKey('https://index.docker.io/v1/'), 'index.docker.io');
    assert.equal(registryKey('http://127.0.0.1:5000/v2/'), '127.0.0.1:5000');
    assert.equal(registryKey('quay.io/team'), 'quay.io/team');
    assert.equal(registryKey('https://quay.io/v2/team'), 'quay.io/team');
    assert.equal(registryKey('registry.example.com:abc'), undefined);
    assert.equal(registryKey('bad host.example.com'), undefined);
  });

  it('returns every match, most specific key first (reverse-sorted index), then the rest', () => {
    const k = new BasicDockerKeyring();
    k.add(
      readDockerConfigJson(
        JSON.stringify({
          auths: {
            'quay.io': { username: 'host', password: 'p' },
            'quay.io/team': { username: 'team', password: 'p' },
            'quay.io/team/app': { username: 'app', password: 'p' },
            '*.quay.io': { username: 'glob', password: 'p' },
            'other.io': { username: 'other', password: 'p' },
          },
        }),
      ),
      'a',
    );
    assert.deepEqual(
      k.lookup('quay.io/team/app').map((c) => c.username),
      ['app', 'team', 'host'],
    );
    assert.deepEqual(
      k.lookup('quay.io/other/app').map((c) => c.username),
      ['host'],
    );
    assert.deepEqual(
      k.lookup('eu.quay.io/team/app').map((c) => c.username),
      ['glob'],
    );
  });

  it('keeps several credentials for one key in the order added (credential rotation)', () => {
    const k = new BasicDockerKeyring();
    k.add(readDockercfg(JSON.stringify({ 'https://quay.io': { username: 'old', password: 'p' } })), 'first');
    k.add(readDockercfg(JSON.stringify({ 'quay.io': { username: 'new', password: 'p' } })), 'second');
    assert.deepEqual(
      k.lookup('quay.io/a/b').map((c) => `${c.username}@${c.source}`),
      ['old@first', 'new@second'],
    );
  });

  it('skips an entry whose key does not parse and reports it', () => {
    const k = new BasicDockerKeyring();
    k.add(readDockercfg(JSON.stringify({ 'quay.io:port': { username: 'x', password: 'p' }, 'quay.io': { username: 'y', password: 'p' } })), 's');
    assert.deepEqual(k.invalidEntries, ['quay.io:port']);
    assert.deepEqual(
      k.lookup('quay.io/a').map((c) => c.username),
      ['y'],
    );
  });
});

describe('docker config parsing (config.go)', () => {
  it('decodes auth, padded and unpadded, splitting at the first colon', () => {
    assert.deepEqual(decodeDockerConfigFieldAuth(b64('foo:bar'), 'r'), { username: 'foo', password: 'bar' });
    assert.deepEqual(decodeDockerConfigFieldAuth(b64('foo:bar:baz').replace(/=+$/, ''), 'r'), { username: 'foo', password: 'bar:baz' });
    assert.deepEqual(decodeDockerConfigFieldAuth(b64('foo:'), 'r'), { username: 'foo', password: '' });
  });

  it('rejects a bad auth field without quoting it', () => {
    for (const bad of [b64('nocolon'), 'not base64!!', 'Zm9v=x==']) {
      assert.throws(
        () => readDockercfg(JSON.stringify({ 'quay.io': { auth: bad } })),
        (e: unknown) => isKubeletErrorWithCode(e, 'InvalidDockerConfig') && !(e as Error).message.includes(bad) && (e as Error).message.includes('"quay.io"'),
      );
    }
  });

  it('reads config.json auths (auth overrides username/password; tokens and email kept; field names case-insensitive)', () => {
    const cfg = readDockerConfigJson(
      JSON.stringify({
        auths: {
          'a.io': { auth: b64('u1:p1'), username: 'ignored', password: 'ignored', email: 'e@x' },
          'b.io': { Username: 'u2', Password: 'p2' },
          'c.io': { identitytoken: 'id-tok' },
          'd.io': { registrytoken: 'reg-tok' },
        },
        HttpHeaders: { 'User-Agent': 'x' },
        credsStore: 'desktop',
      }),
    );
    assert.deepEqual(Object.fromEntries(cfg), {
      'a.io': { username: 'u1', password: 'p1', email: 'e@x', identityToken: '', registryToken: '' },
      'b.io': { username: 'u2', password: 'p2', email: '', identityToken: '', registryToken: '' },
      'c.io': { username: '', password: '', email: '', identityToken: 'id-tok', registryToken: '' },
      'd.io': { username: '', password: '', email: '', identityToken: '', registryToken: 'reg-tok' },
    });
    assert.equal(readDockerConfigJson('{}').size, 0);
  });

  it('rejects invalid JSON and wrong shapes with what was wrong, never the contents', () => {
    const secretText = '{"auths": {"quay.io": {"password": "hunter2-very-secret"';
    assert.throws(
      () => readDockerConfigJson(secretText, 'the file'),
      (e: unknown) => (e as Error).message === 'the file is not valid JSON',
    );
    assert.throws(() => readDockerConfigJson('[]'), /config.json must be an object/);
    assert.throws(() => readDockerConfigJson('{"auths": []}'), /must be an object of registries/);
    assert.throws(() => readDockercfg('{"quay.io": {"password": 7}}'), /the password field of "quay.io" must be a string/);
  });
});

describe('makeDockerKeyring (secrets.go)', () => {
  const node = keyringFor('127.0.0.1:5000', 'node-user', 'node-pw');
  const secret = (name: string, type: string, data: Record<string, string>) => ({ namespace: 'default', name, type, data });

  it('puts pod secret credentials before the node’s', () => {
    const k = makeDockerKeyring(
      [
        secret('json', 'kubernetes.io/dockerconfigjson', { '.dockerconfigjson': JSON.stringify({ auths: { '127.0.0.1:5000': { username: 'json-user', password: 'x' } } }) }),
        secret('cfg', 'kubernetes.io/dockercfg', { '.dockercfg': JSON.stringify({ '127.0.0.1:5000/private': { username: 'cfg-user', password: 'x' } }) }),
      ],
      node,
    );
    assert.deepEqual(
      k.lookup('127.0.0.1:5000/private/busybox').map((c) => `${c.username} (${c.source})`),
      ['cfg-user (secret default/cfg)', 'json-user (secret default/json)', 'node-user (test)'],
    );
  });

  it('ignores secrets of other types, mismatched keys and empty data', () => {
    const k = makeDockerKeyring(
      [
        secret('opaque', 'Opaque', { '.dockerconfigjson': JSON.stringify({ auths: { '127.0.0.1:5000': { username: 'no' } } }) }),
        secret('wrong-key', 'kubernetes.io/dockerconfigjson', { '.dockercfg': JSON.stringify({ '127.0.0.1:5000': { username: 'no' } }) }),
        secret('empty', 'kubernetes.io/dockercfg', { '.dockercfg': '' }),
      ],
      node,
    );
    assert.equal(k, node);
  });

  it('fails on a docker secret that does not parse, naming the secret', () => {
    assert.throws(
      () => makeDockerKeyring([secret('broken', 'kubernetes.io/dockerconfigjson', { '.dockerconfigjson': '{"auths": {"x": {"password": "pw-in-broken-json"' })], node),
      (e: unknown) => isKubeletErrorWithCode(e, 'InvalidDockerConfig') && (e as Error).message === 'the .dockerconfigjson of secret default/broken is not valid JSON',
    );
  });

  it('unions keyrings in order', () => {
    const a = keyringFor('quay.io', 'a');
    const b = keyringFor('quay.io', 'b');
    assert.deepEqual(
      unionDockerKeyring([a, b])
        .lookup('quay.io/x')
        .map((c) => c.username),
      ['a', 'b'],
    );
  });
});
