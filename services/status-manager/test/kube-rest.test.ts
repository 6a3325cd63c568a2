import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { selfSignedCert } from '@splitlet/testkit';
import { createKubeRest } from '../src/api/kube-rest.js';

describe('createKubeRest', () => {
  let dir: string;
  let server: Server;
  let connections = 0;
  let open = 0;
  let maxOpen = 0;
  let kubeconfig: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kube-rest-'));
    const { cert, keyFile } = selfSignedCert(dir);
    server = createServer({ cert, key: readFileSync(keyFile) }, (req, res) => {
      if (req.url?.includes('watch=true') === true) {
        // A stream whose chunks end inside a line, and inside a multi-byte character.
        const text = `${JSON.stringify({ type: 'ADDED', object: { n: 'ä1' } })}\n\n${JSON.stringify({ type: 'MODIFIED', object: { n: 'é2', auth: req.headers.authorization } })}\n`;
        const bytes = Buffer.from(text);
        const cut = bytes.indexOf(Buffer.from('é')) + 1;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(bytes.subarray(0, 10));
        setTimeout(() => {
          res.write(bytes.subarray(10, cut));
          setTimeout(() => res.end(bytes.subarray(cut)), 5);
        }, 5);
        return;
      }
      // Answers slowly enough that concurrent requests overlap.
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ path: req.url, auth: req.headers.authorization }));
      }, 5);
    });
    server.on('secureConnection', (s) => {
      connections++;
      open++;
      maxOpen = Math.max(maxOpen, open);
      s.on('close', () => open--);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        `- name: c\n  cluster:\n    server: https://127.0.0.1:${port}\n    certificate-authority-data: ${cert.toString('base64')}`,
        'users:',
        '- name: u\n  user:\n    token: secret-token',
        'contexts:',
        '- name: x\n  context:\n    cluster: c\n    user: u',
        'current-context: x',
        '',
      ].join('\n'),
    );
  });

  after(() => {
    server.closeAllConnections();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps connections alive: sequential requests share one, a burst opens at most the pool size', async () => {
    const api = await createKubeRest(kubeconfig);
    for (let i = 0; i < 20; i++) {
      const res = await api.request('GET', `/api/v1/pods/p${i}`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { path: `/api/v1/pods/p${i}`, auth: 'Bearer secret-token' });
    }
    assert.equal(connections, 1, 'twenty sequential requests over one TLS connection');
    const burst = await Promise.all(Array.from({ length: 100 }, (_, i) => api.request('POST', '/api/v1/namespaces/default/events', { i })));
    assert.ok(burst.every((r) => r.status === 200));
    assert.ok(maxOpen <= 16, `at most 16 connections open at once, saw ${maxOpen}`);
    assert.ok(connections <= 17, `100 concurrent requests reuse the pool, ${connections} connections in all`);
  });

  it('streams a watch: one event a line, across chunks; resolves when the server ends it', async () => {
    const api = await createKubeRest(kubeconfig);
    const events: unknown[] = [];
    await api.watch('/api/v1/pods?watch=true', (e) => events.push(e), new AbortController().signal);
    assert.deepEqual(events, [
      { type: 'ADDED', object: { n: 'ä1' } },
      { type: 'MODIFIED', object: { n: 'é2', auth: 'Bearer secret-token' } },
    ]);
  });
});
