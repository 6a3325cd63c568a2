import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { realClock } from '@splitlet/service';
import { HttpSource, redactUrl } from '../src/sources/http-source.js';
import type { SourceListing } from '../src/sources/listing.js';
import { manifest, memoryLogger } from './helpers.js';

/** A real HTTP server on 127.0.0.1 whose next response the test sets. */
describe('HttpSource against a local http server', () => {
  let server: Server;
  let url: string;
  let status = 200;
  let body = '';
  let lastHeaders: IncomingHttpHeaders = {};
  let requests = 0;

  before(async () => {
    server = createServer((req, res) => {
      requests++;
      lastHeaders = req.headers;
      res.writeHead(status, { 'content-type': 'application/yaml' });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/manifests`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  beforeEach(() => {
    status = 200;
    body = '';
    requests = 0;
  });

  const make = (listings: SourceListing[], errors: { n: number } = { n: 0 }) => {
    const log = memoryLogger();
    const src = new HttpSource({
      url,
      header: { name: 'Authorization', value: 'Bearer s3cret' },
      nodeName: 'node-a',
      clock: realClock,
      logger: log.logger,
      onListing: async (l) => void listings.push(l),
      onError: () => errors.n++,
    });
    return { src, log };
  };

  it('applies a single pod as a SET, sends the header, ignores an identical body', async () => {
    const listings: SourceListing[] = [];
    const { src, log } = make(listings);
    body = manifest('web');
    assert.equal(await src.poll(), 'applied');
    assert.equal(lastHeaders['authorization'], 'Bearer s3cret');
    assert.equal(listings.length, 1);
    const pod = listings[0]!.pods![0]!.pod;
    assert.equal(pod.metadata.name, 'web-node-a');
    assert.equal(pod.metadata.annotations?.['kubernetes.io/config.source'], 'http');
    assert.equal(listings[0]!.pods![0]!.origin, url);
    assert.equal(await src.poll(), 'unchanged');
    assert.equal(await src.poll(), 'unchanged');
    assert.equal(requests, 3);
    assert.equal(listings.length, 1);
    body = manifest('web', 'busybox:1.37');
    assert.equal(await src.poll(), 'applied');
    assert.equal(listings.length, 2);
    assert.ok(!JSON.stringify(log.records).includes('s3cret'), 'the header value is never logged');
  });

  it('accepts a PodList', async () => {
    const listings: SourceListing[] = [];
    const { src } = make(listings);
    body = JSON.stringify({
      apiVersion: 'v1',
      kind: 'PodList',
      items: [
        { metadata: { name: 'a' }, spec: { containers: [{ name: 'c', image: 'i' }] } },
        { metadata: { name: 'b' }, spec: { containers: [{ name: 'c', image: 'i' }] } },
      ],
    });
    assert.equal(await src.poll(), 'applied');
    assert.deepEqual(
      listings[0]!.pods!.map((p) => p.pod.metadata.name),
      ['a-node-a', 'b-node-a'],
    );
  });

  it('a non-200 status is an error with the status and changes nothing', async () => {
    const listings: SourceListing[] = [];
    const errors = { n: 0 };
    const { src, log } = make(listings, errors);
    status = 503;
    body = manifest('web');
    assert.equal(await src.poll(), 'failed');
    assert.equal(listings.length, 0);
    assert.equal(errors.n, 1);
    const rec = log.records.find((r) => r['msg'] === 'failed to read pods from URL');
    assert.equal(rec?.['err'], `${url}: 503 Service Unavailable`);
    assert.equal(rec?.['level'], 'warn');
  });

  it('drops the failure log to debug after 3 failures, and says when it recovers', async () => {
    const { src, log } = make([]);
    status = 500;
    for (let i = 0; i < 5; i++) await src.poll();
    const levels = log.records.filter((r) => String(r['msg']).startsWith('failed to read pods from URL')).map((r) => r['level']);
    assert.deepEqual(levels, ['warn', 'warn', 'warn', 'warn', 'debug']);
    status = 200;
    body = manifest('web');
    await src.poll();
    assert.ok(log.records.some((r) => r['msg'] === 'successfully read pods from URL'));
  });

  it('an empty body sends SET [] plus an error', async () => {
    const listings: SourceListing[] = [];
    const { src } = make(listings);
    body = manifest('web');
    await src.poll();
    body = '';
    assert.equal(await src.poll(), 'empty');
    assert.deepEqual(listings[1], { source: 'http', pods: [], errors: [{ kind: 'url', location: url, message: `zero-length data received from ${url}` }] });
    // The previous manifest coming back is applied again.
    body = manifest('web');
    assert.equal(await src.poll(), 'applied');
  });

  it('an unusable body reports the manifest error without a SET', async () => {
    const listings: SourceListing[] = [];
    const { src } = make(listings);
    body = manifest('x').replace('  name: x\n', '');
    assert.equal(await src.poll(), 'invalid');
    assert.deepEqual(listings, [{ source: 'http', errors: [{ kind: 'url', location: url, message: 'invalid pod: name is needed for the pod' }] }]);
    assert.equal(await src.poll(), 'unchanged');
  });

  it('a connection failure is an error', async () => {
    const src = new HttpSource({ url: 'http://127.0.0.1:1/x', nodeName: 'n', clock: realClock, logger: memoryLogger().logger, onListing: async () => undefined });
    assert.equal(await src.poll(), 'failed');
  });

  it('redacts a password in the URL', () => {
    assert.equal(redactUrl('http://user:pw@host/x'), 'http://user:REDACTED@host/x');
  });

  it('runs until aborted', async () => {
    const listings: SourceListing[] = [];
    body = manifest('web');
    const ac = new AbortController();
    const src = new HttpSource({ url, nodeName: 'n', periodMs: 600_000, clock: realClock, logger: memoryLogger().logger, onListing: async (l) => void listings.push(l) });
    const done = src.run(ac.signal);
    while (listings.length === 0) await new Promise((r) => setImmediate(r));
    ac.abort();
    await done;
    assert.equal(listings.length, 1);
  });
});
