/**
 * The probe handlers against real servers on loopback: HTTP (status codes, the kubelet's headers,
 * same-host redirects followed, other-host redirects a warning, timeouts and refused connections in
 * Go's words), TCP, gRPC health (SERVING, NOT_SERVING, unimplemented), and port resolution.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { decodeHealthCheckStatus, encodeHealthCheckRequest, grpcProbe } from '../src/handlers/grpc-probe.js';
import { httpProbe } from '../src/handlers/http-probe.js';
import { resolveContainerPort } from '../src/handlers/resolve-port.js';
import { tcpProbe } from '../src/handlers/tcp-probe.js';
import { KUBE_PROBE_USER_AGENT } from '../src/prober/probe-type.js';

/** A port nothing listens on (bound then closed). */
async function closedPort(): Promise<number> {
  const s = createTcpServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('httpGet probe', () => {
  let server: Server;
  let port: number;
  let seen: IncomingHttpHeaders = {};
  before(async () => {
    server = createServer((req, res) => {
      seen = req.headers;
      const u = new URL(req.url ?? '/', 'http://x');
      if (u.pathname === '/ok') return void res.end('fine');
      if (u.pathname === '/fail') return void res.writeHead(503).end('down');
      if (u.pathname === '/local') return void res.writeHead(302, { location: '/ok' }).end();
      if (u.pathname === '/away') return void res.writeHead(302, { location: 'http://example.invalid/x' }).end('moved');
      if (u.pathname === '/slow') return void setTimeout(() => res.end('late'), 3000);
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  const req = (path: string, headers: { name: string; value: string }[] = []) => ({
    scheme: 'http' as const,
    host: '127.0.0.1',
    port,
    path,
    headers,
    userAgent: KUBE_PROBE_USER_AGENT,
  });

  it('succeeds on 2xx with the kubelet User-Agent and Accept', async () => {
    assert.deepEqual(await httpProbe(req('/ok'), 1000), { result: 'success', output: 'fine' });
    assert.equal(seen['user-agent'], 'kube-probe/1.34');
    assert.equal(seen['accept'], '*/*');
  });

  it('sends the probe headers, which override User-Agent; an empty Accept removes it', async () => {
    await httpProbe(
      req('/ok', [
        { name: 'X-Custom', value: 'a' },
        { name: 'User-Agent', value: 'mine' },
        { name: 'Accept', value: '' },
      ]),
      1000,
    );
    assert.equal(seen['x-custom'], 'a');
    assert.equal(seen['user-agent'], 'mine');
    assert.equal(seen['accept'], undefined);
  });

  it('fails on an error status with the kubelet text', async () => {
    assert.deepEqual(await httpProbe(req('/fail'), 1000), { result: 'failure', output: 'HTTP probe failed with statuscode: 503' });
  });

  it('follows a same-host redirect, and warns on one to another host', async () => {
    assert.deepEqual(await httpProbe(req('/local'), 1000), { result: 'success', output: 'fine' });
    assert.deepEqual(await httpProbe(req('/away'), 1000), { result: 'warning', output: 'Probe terminated redirects, Response body: moved' });
  });

  it('times out and refuses in Go words', async () => {
    const slow = await httpProbe(req('/slow'), 200);
    assert.deepEqual(slow, { result: 'failure', output: `Get "http://127.0.0.1:${port}/slow": context deadline exceeded (Client.Timeout exceeded while awaiting headers)` });
    const closed = await closedPort();
    const refused = await httpProbe({ ...req('/x'), port: closed }, 1000);
    assert.deepEqual(refused, { result: 'failure', output: `Get "http://127.0.0.1:${closed}/x": dial tcp 127.0.0.1:${closed}: connect: connection refused` });
  });
});

describe('tcpSocket probe', () => {
  it('succeeds when the port accepts, fails with Go text when refused', async () => {
    const s = createTcpServer((c) => c.end());
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const port = (s.address() as AddressInfo).port;
    try {
      assert.deepEqual(await tcpProbe('127.0.0.1', port, 1000), { result: 'success', output: '' });
    } finally {
      await new Promise<void>((r) => s.close(() => r()));
    }
    const closed = await closedPort();
    assert.deepEqual(await tcpProbe('127.0.0.1', closed, 1000), { result: 'failure', output: `dial tcp 127.0.0.1:${closed}: connect: connection refused` });
  });
});

describe('grpc probe', () => {
  let server: grpc.Server;
  let port: number;
  let status = 1;
  let agent = '';
  before(async () => {
    server = new grpc.Server();
    server.addService(
      {
        Check: {
          path: '/grpc.health.v1.Health/Check',
          requestStream: false,
          responseStream: false,
          requestSerialize: (r: { service: string }) => encodeHealthCheckRequest(r.service),
          requestDeserialize: (b: Buffer) => ({ service: b.length > 2 ? b.subarray(2).toString() : '' }),
          responseSerialize: (n: number) => Buffer.from([0x08, n]),
          responseDeserialize: (b: Buffer) => decodeHealthCheckStatus(b),
        },
      },
      {
        Check: (call: grpc.ServerUnaryCall<{ service: string }, number>, cb: grpc.sendUnaryData<number>) => {
          agent = String(call.metadata.get('user-agent')[0] ?? '');
          if (call.request.service === 'missing') return cb({ code: grpc.status.UNIMPLEMENTED, details: 'unknown service' });
          cb(null, status);
        },
      },
    );
    port = await new Promise<number>((r, j) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? j(e) : r(p))));
  });
  after(() => {
    server.forceShutdown();
  });

  it('is healthy when SERVING, unhealthy otherwise, with the kubelet texts', async () => {
    status = 1;
    assert.deepEqual(await grpcProbe('127.0.0.1', port, '', 2000, KUBE_PROBE_USER_AGENT), { result: 'success', output: 'service healthy' });
    assert.match(agent, /^kube-probe\/1\.34/);
    status = 2;
    assert.deepEqual(await grpcProbe('127.0.0.1', port, 'svc', 2000, KUBE_PROBE_USER_AGENT), { result: 'failure', output: 'service unhealthy (responded with "NOT_SERVING")' });
    assert.deepEqual(await grpcProbe('127.0.0.1', port, 'missing', 2000, KUBE_PROBE_USER_AGENT), {
      result: 'failure',
      output: 'error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service',
    });
  });

  it('fails to connect within the timeout', async () => {
    const closed = await closedPort();
    assert.deepEqual(await grpcProbe('127.0.0.1', closed, '', 300, KUBE_PROBE_USER_AGENT), {
      result: 'failure',
      output: `timeout: failed to connect service "127.0.0.1:${closed}" within 300ms: context deadline exceeded`,
    });
  });
});

describe('port resolution', () => {
  const c = { name: 'app', ports: [{ name: 'http', containerPort: 8080 }] };
  it('resolves numbers and names, with the kubelet errors', () => {
    assert.equal(resolveContainerPort(81, c), 81);
    assert.equal(resolveContainerPort('http', c), 8080);
    assert.equal(resolveContainerPort('9090', c), 9090);
    assert.throws(() => resolveContainerPort('web', c), { message: 'strconv.Atoi: parsing "web": invalid syntax' });
    assert.throws(() => resolveContainerPort(70000, c), { message: 'invalid port number: 70000' });
  });
});
