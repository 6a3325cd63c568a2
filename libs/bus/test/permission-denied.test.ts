/**
 * A request whose publish (or inbox subscription) the server refuses fails at once with
 * PermissionDenied, not at its timeout; other requests are not affected. The real server's side is
 * tested in test/integration/nats-permissions.test.ts; this checks the bookkeeping.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { CoreClient, type CoreTransport } from '../src/core-client.ts';
import { isBusError } from '../src/index.ts';

function silentTransport(): CoreTransport & { published: string[] } {
  const published: string[] = [];
  return {
    published,
    publish: (subject) => void published.push(subject),
    subscribe: () => ({ unsubscribe: () => undefined, drain: () => Promise.resolve() }),
  };
}

const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

test('a refused publish fails its requests at once; a request on another subject keeps waiting', async () => {
  const transport = silentTransport();
  const core = new CoreClient({ transport, logger: quiet, metrics: undefined, deadLetter: () => Promise.resolve() });
  const t0 = performance.now();
  const denied = core.request(z.object({}), z.unknown(), 'sl.n.rpc.config.apply', {}, { timeoutMs: 15_000 });
  const other = core.request(z.object({}), z.unknown(), 'sl.n.rpc.logs.read', {}, { timeoutMs: 300 });
  assert.deepEqual(transport.published, ['sl.n.rpc.config.apply', 'sl.n.rpc.logs.read']);
  core.permissionDenied('publish', 'sl.n.rpc.config.apply');
  await assert.rejects(denied, (e: unknown) => isBusError(e, 'PermissionDenied') && !e.retryable && /sl\.n\.rpc\.config\.apply/.test(e.message));
  assert.ok(performance.now() - t0 < 1000, 'at once, not after the 15 s timeout');
  await assert.rejects(other, (e: unknown) => isBusError(e, 'Timeout'), 'the other request is not failed by it');
  // Nothing is left registered: a later refusal on the same subject touches no finished request.
  core.permissionDenied('publish', 'sl.n.rpc.config.apply');
});

test('a refused inbox subscription fails every waiting request', async () => {
  const core = new CoreClient({ transport: silentTransport(), logger: quiet, metrics: undefined, deadLetter: () => Promise.resolve() });
  const a = core.request(z.object({}), z.unknown(), 'sl.n.rpc.a', {}, { timeoutMs: 15_000 });
  const b = core.request(z.object({}), z.unknown(), 'sl.n.rpc.b', {}, { timeoutMs: 15_000 });
  core.permissionDenied('subscription', '_INBOX.abc.*');
  await assert.rejects(a, (e: unknown) => isBusError(e, 'PermissionDenied'));
  await assert.rejects(b, (e: unknown) => isBusError(e, 'PermissionDenied'));
});
