/**
 * loadKubeEndpoint: what a kubeconfig gives a request (server, TLS material, credentials) without
 * @kubernetes/client-node, the same as client-node's applyToHTTPSOptions gives; client-node only
 * for what it alone implements (exec); clear errors. getJson/watchJson against a local HTTPS server
 * with the kubeconfig's CA and token.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { selfSignedCert } from '@splitlet/testkit';
import { KubeConfig } from '@kubernetes/client-node';
import { getJson, loadKubeEndpoint, watchJson, type KubeWatchEvent } from '../src/index.js';

const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');

describe('loadKubeEndpoint', () => {
  let dir: string;
  let server: Server;
  let port: number;
  let cert: Buffer;
  const seen: Array<{ url: string; auth: string | undefined }> = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kube-endpoint-'));
    const tls = selfSignedCert(dir);
    cert = tls.cert;
    server = createServer({ cert, key: readFileSync(tls.keyFile) }, (req, res) => {
      seen.push({ url: req.url ?? '', auth: req.headers.authorization });
      if (req.url?.includes('watch=true') === true) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(`${JSON.stringify({ type: 'ADDED', object: { n: 1 } })}\n${JSON.stringify({ type: 'BOOKMARK', object: { n: 2 } }).slice(0, 9)}`);
        setTimeout(() => res.end(`${JSON.stringify({ type: 'BOOKMARK', object: { n: 2 } }).slice(9)}\n`), 5);
        return;
      }
      res.writeHead(req.headers.authorization === 'Bearer t0k' ? 200 : 401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ path: req.url }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const write = (name: string, text: string): string => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const kubeconfig = (cluster: string, user: string): string =>
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: c',
      '  cluster:',
      cluster,
      'users:',
      '- name: u',
      '  user:',
      user,
      'contexts:',
      '- name: ctx',
      '  context: {cluster: c, user: u}',
      'current-context: ctx',
    ].join('\n');

  it('gives a request what client-node gives it: CA, token, server without its trailing slash', async () => {
    const path = write('a.yaml', kubeconfig(`    server: https://127.0.0.1:${port}/\n    certificate-authority-data: ${b64(cert)}`, '    token: t0k'));
    const e = await loadKubeEndpoint(path);
    assert.equal(e.viaClientNode, false);
    assert.equal(e.server.href, `https://127.0.0.1:${port}/`);
    const o = await e.requestOptions();
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    const theirs: { headers: Record<string, string>; ca?: Buffer } = { headers: {} };
    await kc.applyToHTTPSOptions(theirs);
    assert.deepEqual(o.ca, theirs.ca);
    assert.equal(o.headers['Authorization'], theirs.headers['Authorization']);
    const res = await getJson(e, '/api/v1/pods?fieldSelector=spec.nodeName%3Dn');
    assert.deepEqual(res, { status: 200, body: { path: '/api/v1/pods?fieldSelector=spec.nodeName%3Dn' } });
  });

  it('reads files relative to the kubeconfig, and a token file again at every request', async () => {
    writeFileSync(join(dir, 'ca.pem'), cert);
    writeFileSync(join(dir, 'token'), 'old\n');
    const path = write(
      'b.yaml',
      kubeconfig(`    server: https://127.0.0.1:${port}\n    certificate-authority: ca.pem\n    tls-server-name: 127.0.0.1`, '    tokenFile: token\n    as: someone'),
    );
    const e = await loadKubeEndpoint(path);
    const o = await e.requestOptions();
    assert.deepEqual(o.ca, cert);
    assert.equal(o.servername, '127.0.0.1');
    assert.equal(o.headers['Authorization'], 'Bearer old');
    assert.equal(o.headers['Impersonate-User'], 'someone');
    writeFileSync(join(dir, 'token'), 't0k');
    assert.equal((await getJson(e, '/x')).status, 200);
  });

  it('client certificates and basic auth, as client-node reads them', async () => {
    const path = write(
      'c.yaml',
      kubeconfig(
        `    server: https://127.0.0.1:${port}\n    insecure-skip-tls-verify: true`,
        `    client-certificate-data: ${b64('CERT')}\n    client-key: key.pem\n    username: me\n    password: pw`,
      ),
    );
    const o = await (await loadKubeEndpoint(path)).requestOptions();
    assert.equal(o.rejectUnauthorized, false);
    assert.deepEqual(o.cert, Buffer.from('CERT'));
    assert.deepEqual(o.key, readFileSync(join(dir, 'key.pem')));
    assert.equal(o.auth, 'me:pw');
  });

  it('leaves an exec credential plugin to client-node', async () => {
    const path = write('d.yaml', kubeconfig(`    server: https://127.0.0.1:${port}`, '    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/false'));
    const e = await loadKubeEndpoint(path);
    assert.equal(e.viaClientNode, true);
  });

  it('refuses what client-node refuses, naming the file', async () => {
    const http = write('e.yaml', kubeconfig('    server: http://127.0.0.1:1', '    token: t'));
    await assert.rejects(loadKubeEndpoint(http), /e\.yaml: HTTP protocol is not allowed when insecure-skip-tls-verify is not set/);
    const noContext = write('f.yaml', 'apiVersion: v1\nkind: Config\nclusters: []\n');
    await assert.rejects(loadKubeEndpoint(noContext), /f\.yaml has no current-context/);
    const missing = write('g.yaml', kubeconfig('    server: https://x', '    token: t').replace('cluster: c, user: u', 'cluster: other, user: u'));
    await assert.rejects(loadKubeEndpoint(missing), /g\.yaml: cluster "other" not found/);
    await assert.rejects(loadKubeEndpoint(join(dir, 'nothing.yaml')), /nothing\.yaml could not be read/);
  });

  it('watchJson streams the events in order, a line split across chunks, until the server ends the stream', async () => {
    const path = write('h.yaml', kubeconfig(`    server: https://127.0.0.1:${port}\n    certificate-authority-data: ${b64(cert)}`, '    token: t0k'));
    const events: KubeWatchEvent[] = [];
    await watchJson(await loadKubeEndpoint(path), '/api/v1/pods', { resourceVersion: '7' }, (e) => events.push(e), new AbortController().signal);
    assert.deepEqual(events, [
      { type: 'ADDED', object: { n: 1 } },
      { type: 'BOOKMARK', object: { n: 2 } },
    ]);
    assert.equal(seen.at(-1)!.url, '/api/v1/pods?watch=true&resourceVersion=7');
  });
});
