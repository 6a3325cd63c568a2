/**
 * The pod DNS forwarder over real sockets: UDP and TCP queries reach the node's resolver (a stand-in
 * upstream on 127.0.0.1 that marks its answers) and the answers come back to the asker; the pods'
 * resolv.conf names the gateway with the node's search and options; a node resolv.conf without a
 * nameserver is an error naming the file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import type { Socket } from 'node:dgram';
import { createConnection, createServer } from 'node:net';
import type { Server } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPodDns } from '../src/pod-dns.ts';

/** The upstream's answer to a query: the query with a marker in front. */
const answerTo = (query: Buffer): Buffer => Buffer.concat([Buffer.from('answer:'), query]);

async function upstream(): Promise<{ port: number; udp: Socket; tcp: Server; close: () => Promise<void> }> {
  const udp = createSocket('udp4');
  udp.on('message', (q, from) => udp.send(answerTo(q), from.port, from.address));
  await new Promise<void>((r) => udp.bind(0, '127.0.0.1', () => r()));
  const port = udp.address().port;
  const tcp = createServer((c) => {
    c.once('data', (framed: Buffer) => {
      const a = answerTo(framed.subarray(2));
      const len = Buffer.alloc(2);
      len.writeUInt16BE(a.length);
      c.end(Buffer.concat([len, a]));
    });
  });
  await new Promise<void>((r) => tcp.listen(port, '127.0.0.1', () => r()));
  const close = async (): Promise<void> => {
    await Promise.all([new Promise<void>((r) => udp.close(() => r())), new Promise<void>((r) => tcp.close(() => r()))]);
  };
  return { port, udp, tcp, close };
}

test('pod DNS: UDP and TCP queries are relayed to the node resolver; the pods resolv.conf names the gateway', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'splitlet-pod-dns-'));
  const up = await upstream();
  const hostResolvConf = join(dir, 'resolv.conf');
  writeFileSync(hostResolvConf, '# Docker\nsearch corp.example\nnameserver 127.0.0.1\nnameserver 10.0.0.2\noptions ndots:0\n');
  const podResolvConf = join(dir, 'pod-resolv.conf');
  const dns = await startPodDns({ hostResolvConf, gateway: '10.213.7.1', podResolvConf, port: 0, upstreamPort: up.port });
  try {
    assert.equal(dns.upstream, `127.0.0.1:${up.port}`, 'the first nameserver of the node');
    const lines = readFileSync(podResolvConf, 'utf8')
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('#'));
    assert.deepEqual(lines, ['nameserver 10.213.7.1', 'search corp.example', 'options ndots:0']);

    const client = createSocket('udp4');
    try {
      const query = Buffer.from([0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
      const answer = await new Promise<Buffer>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no UDP answer within 10 s')), 10_000);
        client.once('message', (m) => {
          clearTimeout(timer);
          resolve(m);
        });
        client.send(query, dns.port, '127.0.0.1');
      });
      assert.deepEqual(answer, answerTo(query), 'the UDP answer of the upstream');
    } finally {
      client.close();
    }

    const framed = Buffer.from([0, 4, 0xab, 0xcd, 0xef, 0x01]);
    const tcpAnswer = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const c = createConnection({ host: '127.0.0.1', port: dns.port }, () => c.write(framed));
      c.setTimeout(10_000, () => c.destroy(new Error('no TCP answer within 10 s')));
      c.on('data', (d: Buffer) => chunks.push(d));
      c.on('error', reject);
      c.on('close', () => resolve(Buffer.concat(chunks)));
    });
    const expected = answerTo(framed.subarray(2));
    assert.equal(tcpAnswer.readUInt16BE(0), expected.length, 'the TCP answer keeps its length prefix');
    assert.deepEqual(tcpAnswer.subarray(2), expected, 'the TCP answer of the upstream');
  } finally {
    await dns.close();
    await up.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('pod DNS: a node resolv.conf without a nameserver is an error naming the file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'splitlet-pod-dns-'));
  try {
    const hostResolvConf = join(dir, 'resolv.conf');
    writeFileSync(hostResolvConf, 'search corp.example\n');
    await assert.rejects(startPodDns({ hostResolvConf, gateway: '10.213.7.1', podResolvConf: join(dir, 'pod'), port: 0 }), new RegExp(`${hostResolvConf} names no nameserver`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
