/**
 * Runs the one Bus contract suite against NatsBus (a real nats-server from libs/testkit) and
 * against InMemoryBus, so the in-memory bus that unit tests use behaves like the real one.
 */
import { after, before } from 'node:test';
import { context, propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { startNatsServer, type NatsServer } from '@splitlet/testkit';
import { connectBus } from '../src/index.ts';
import { InMemoryBus, InMemoryNats } from '../src/testing/index.ts';
import { busContract } from './bus-contract.ts';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

before(() => {
  const cm = new AsyncLocalStorageContextManager();
  cm.enable();
  context.setGlobalContextManager(cm);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(new BasicTracerProvider());
});

let server: Promise<NatsServer> | undefined;
after(async () => {
  if (server !== undefined) await (await server).stop();
});

busContract('NatsBus', async ({ node, progressBeatMs }) => {
  server ??= startNatsServer();
  const url = (await server).url;
  const a = await connectBus({ servers: url, process: 'contract-a', node, logger: quiet });
  const b = await connectBus({ servers: url, process: 'contract-b', node, logger: quiet, progressBeatMs, provision: false });
  return { a, b, close: async () => void (await Promise.all([a.close(), b.close()])) };
});

busContract('InMemoryBus', async ({ node, progressBeatMs }) => {
  const shared = new InMemoryNats();
  const a = new InMemoryBus({ server: shared, process: 'contract-a', node });
  const b = new InMemoryBus({ server: shared, process: 'contract-b', node, progressBeatMs });
  return { a, b, close: async () => void (await Promise.all([a.close(), b.close()])) };
});
