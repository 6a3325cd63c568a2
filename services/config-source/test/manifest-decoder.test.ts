import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeManifest } from '../src/sources/manifest-decoder.js';

const NODE = 'Node-A';
const file = (path = '/etc/kubernetes/manifests/web.yaml') => ({ kind: 'file' as const, path });

const WEB = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: nginx
    image: nginx:1.27
`;

describe('decodeManifest', () => {
  it('decodes a YAML pod into a bound static pod', () => {
    const r = decodeManifest(WEB, NODE, file());
    assert.ok(r.ok);
    assert.equal(r.pods.length, 1);
    const pod = r.pods[0]!;
    assert.equal(pod.metadata.name, 'web-node-a');
    assert.equal(pod.metadata.namespace, 'default');
    assert.match(pod.metadata.uid, /^[0-9a-f]{32}$/);
    assert.equal(pod.metadata.annotations?.['kubernetes.io/config.hash'], pod.metadata.uid);
    assert.equal(pod.metadata.annotations?.['kubernetes.io/config.source'], 'file');
    assert.equal(pod.spec.nodeName, NODE);
    assert.equal(pod.status?.phase, 'Pending');
    assert.deepEqual(pod.spec.tolerations, [{ operator: 'Exists', effect: 'NoExecute' }]);
    assert.equal(pod.spec.restartPolicy, 'Always');
  });

  it('the UID is a hash of content, node and path', () => {
    const a = decodeManifest(WEB, NODE, file());
    const b = decodeManifest(WEB, NODE, file());
    const c = decodeManifest(WEB, NODE, file('/other.yaml'));
    const d = decodeManifest(WEB.replace('nginx:1.27', 'nginx:1.28'), NODE, file());
    assert.ok(a.ok && b.ok && c.ok && d.ok);
    assert.equal(a.pods[0]!.metadata.uid, b.pods[0]!.metadata.uid);
    assert.notEqual(a.pods[0]!.metadata.uid, c.pods[0]!.metadata.uid);
    assert.notEqual(a.pods[0]!.metadata.uid, d.pods[0]!.metadata.uid);
  });

  it('keeps an explicit metadata.uid', () => {
    const r = decodeManifest(WEB.replace('  name: web', '  name: web\n  uid: fixed-uid'), NODE, file());
    assert.ok(r.ok);
    assert.equal(r.pods[0]!.metadata.uid, 'fixed-uid');
  });

  it('decodes JSON', () => {
    const json = JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'j', namespace: 'kube-system' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
    const r = decodeManifest(json, NODE, file());
    assert.ok(r.ok);
    assert.equal(r.pods[0]!.metadata.name, 'j-node-a');
    assert.equal(r.pods[0]!.metadata.namespace, 'kube-system');
  });

  it('decodes several documents, skipping empty ones', () => {
    const r = decodeManifest(`---\n${WEB}---\n${WEB.replace('name: web', 'name: api')}---\n`, NODE, file());
    assert.ok(r.ok);
    assert.deepEqual(
      r.pods.map((p) => p.metadata.name),
      ['web-node-a', 'api-node-a'],
    );
  });

  it('decodes a v1 PodList', () => {
    const list = `apiVersion: v1
kind: PodList
items:
- metadata: {name: a}
  spec: {containers: [{name: c, image: busybox}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: b}
  spec: {containers: [{name: c, image: busybox}]}
`;
    const r = decodeManifest(list, NODE, file());
    assert.ok(r.ok);
    assert.deepEqual(
      r.pods.map((p) => p.metadata.name),
      ['a-node-a', 'b-node-a'],
    );
  });

  it('an empty manifest has no pods', () => {
    assert.deepEqual(decodeManifest('', NODE, file()), { ok: true, pods: [] });
    assert.deepEqual(decodeManifest('# just a comment\n', NODE, file()), { ok: true, pods: [] });
  });

  it('a pod without a name: the kubelet message', () => {
    const r = decodeManifest(WEB.replace('  name: web\n', ''), NODE, file());
    assert.deepEqual(r, { ok: false, message: 'invalid pod: name is needed for the pod' });
  });

  it('an unknown kind or apiVersion names the kind', () => {
    const r = decodeManifest('apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n', NODE, file());
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.message : '', /unsupported kind "Deployment" \(apiVersion "apps\/v1"\)/);
    const r2 = decodeManifest(WEB.replace('apiVersion: v1', 'apiVersion: v2'), NODE, file());
    assert.match(!r2.ok ? r2.message : '', /unsupported kind "Pod" \(apiVersion "v2"\)/);
    const r3 = decodeManifest('metadata: {name: x}\n', NODE, file());
    assert.match(!r3.ok ? r3.message : '', /without kind and apiVersion/);
  });

  it('invalid YAML', () => {
    const r = decodeManifest('apiVersion: v1\nkind: Pod\nmetadata: {name: [\n', NODE, file());
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.message : '', /^error converting YAML to JSON: yaml: line 3: /);
    const r2 = decodeManifest('apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  labels: {a: b\nspec: {}\n', NODE, file());
    assert.match(!r2.ok ? r2.message : '', /^error converting YAML to JSON: yaml: line [56]: /);
  });

  it('a validation failure uses the kubelet format', () => {
    const r = decodeManifest(WEB.replace('  - name: nginx\n    image: nginx:1.27\n', '  - name: Bad_Name\n'), NODE, file());
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.message : '', /^invalid pod: \[spec\.containers\[0\]\.name: Invalid value: "Bad_Name": .* spec\.containers\[0\]\.image: Required value\]$/);
  });

  it('a type error is a parse failure with the field path', () => {
    const r = decodeManifest(WEB.replace('labels: {app: web}', 'labels: [1]'), NODE, file());
    assert.match(!r.ok ? r.message : '', /^couldn't parse as pod: metadata\.labels: /);
  });

  it('a bad document fails the whole manifest and names the document index', () => {
    const r = decodeManifest(`${WEB}---\napiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {containers: [{name: c, image: i}]}\n`, NODE, file());
    assert.deepEqual(r, { ok: false, message: 'document[1]: invalid pod: name is needed for the pod', document: 1 });
  });

  it('http: a single document only', () => {
    const r = decodeManifest(`${WEB}---\n${WEB}`, NODE, { kind: 'http', url: 'http://x/' }, { multiDocument: false });
    assert.equal(r.ok, false);
    const ok = decodeManifest(WEB, NODE, { kind: 'http', url: 'http://x/' }, { multiDocument: false });
    assert.ok(ok.ok);
    assert.equal(ok.pods[0]!.metadata.annotations?.['kubernetes.io/config.source'], 'http');
    assert.equal(ok.pods[0]!.spec.tolerations, undefined);
  });
});
