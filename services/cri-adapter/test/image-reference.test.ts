import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyDefaultImageTag, ImageReferenceError, parseImageName } from '../src/images/image-reference.js';

describe('applyDefaultImageTag', () => {
  const cases: Array<[string, string]> = [
    ['busybox', 'busybox:latest'],
    ['busybox:1.36', 'busybox:1.36'],
    ['library/busybox', 'library/busybox:latest'],
    ['registry.k8s.io/pause:3.9', 'registry.k8s.io/pause:3.9'],
    ['localhost:5000/app', 'localhost:5000/app:latest'],
    ['localhost:5000/app:v1', 'localhost:5000/app:v1'],
    ['quay.io/org/app@sha256:' + 'a'.repeat(64), 'quay.io/org/app@sha256:' + 'a'.repeat(64)],
    ['app:v1@sha256:' + 'b'.repeat(64), 'app:v1@sha256:' + 'b'.repeat(64)],
  ];
  for (const [input, want] of cases) it(`${input} → ${want}`, () => assert.equal(applyDefaultImageTag(input), want));

  it('rejects references that do not parse, with the kubelet wording', () => {
    for (const bad of ['Busybox', 'busybox:', 'busy box', ':tag', 'a'.repeat(64), 'foo@sha256:short', '']) {
      assert.throws(
        () => applyDefaultImageTag(bad),
        (e: unknown) => e instanceof ImageReferenceError && e.message.startsWith(`couldn't parse image name ${JSON.stringify(bad)}: `),
        bad,
      );
    }
    assert.throws(() => applyDefaultImageTag('Busybox'), /repository name \(library\/Busybox\) must be lowercase/);
    assert.throws(() => applyDefaultImageTag('busybox:'), /invalid reference format$/);
  });
});

describe('parseImageName', () => {
  it('normalizes the repository and defaults the tag', () => {
    assert.deepEqual(parseImageName('busybox'), { repository: 'docker.io/library/busybox', tag: 'latest', digest: '' });
    assert.deepEqual(parseImageName('index.docker.io/foo/bar:1'), { repository: 'docker.io/foo/bar', tag: '1', digest: '' });
    assert.deepEqual(parseImageName('Registry.Example.com/x'), { repository: 'Registry.Example.com/x', tag: 'latest', digest: '' });
  });
});
