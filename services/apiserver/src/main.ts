/**
 * apiserver: the composition root of the embedded Kubernetes API server. Objects live in JetStream
 * KV; clients authenticate with the bearer token in the kubeconfig it writes; TLS with its own CA.
 *
 * On `runProcess` (the common bootstrap: config-error exit 2, telemetry, logger, health, SIGTERM
 * drain) rather than `runNodeProcess`: the object store needs the raw NATS connection (KV watch
 * and JetStream management), which the node `Bus` contract does not expose, so it opens its own.
 */
import { writeFile, rename } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, PermissionViolationError } from '@nats-io/transport-node';
import { ContainerLogsReply, ContainerLogsRequest, Subjects } from '@splitlet/api';
import { NatsBus, isBusError } from '@splitlet/bus';
import { natsServers, runProcess } from '@splitlet/service';
import { ensureCredentials, kubeconfigYaml } from './auth/pki.js';
import { ApiServerEnv, processEnv } from './config.js';
import { createApiHandler, type PodLogSource } from './http/api-handler.js';
import { RestStorage } from './registry/rest-storage.js';
import { ensureBootstrapObjects } from './storage/bootstrap.js';
import { ObjectStore } from './storage/object-store.js';
import { Scheduler } from './scheduler/scheduler.js';

const SERVICE = 'apiserver';
const COMPACT_EVERY_MS = 60_000;
const SCHEDULE_EVERY_MS = 1000;
/** One chunk of a node's log file over the bus. */
const LOG_READ_TIMEOUT_MS = 15_000;

await runProcess({
  service: SERVICE,
  schema: ApiServerEnv,
  env: processEnv(),
  start: async ({ config, logger, signal, health, onClose }) => {
    const nc = await connect({
      servers: natsServers(config.NATS_URL),
      name: `${SERVICE}-${config.NODE_NAME}`,
      maxReconnectAttempts: -1,
      noAsyncTraces: true,
      ...(config.NATS_USER !== undefined ? { user: config.NATS_USER, pass: config.NATS_PASSWORD ?? '' } : {}),
    });
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'error' && s.error instanceof PermissionViolationError) {
          logger.error('NATS permissions violation: the server refused this process', {
            operation: s.error.operation,
            subject: s.error.subject,
            user: config.NATS_USER ?? '(none)',
          });
        }
      }
    })().catch(() => undefined);
    onClose({ name: 'nats', close: () => nc.drain() });
    const store = await ObjectStore.open(nc, await jetstreamManager(nc), config.API_BUCKET);
    const storage = new RestStorage(store);
    await storage.startWatchCaches(signal, logger);
    await ensureBootstrapObjects(storage);
    const creds = await ensureCredentials(config.API_CERT_DIR, config.API_SANS);

    let lastCompaction = Date.now();
    const compact = (): void => {
      store
        .compact(Date.now())
        .then((n) => {
          lastCompaction = Date.now();
          if (n > 0) logger.info('compacted deletion tombstones', { purged: n });
        })
        .catch((e: unknown) => logger.warn('compaction failed', { err: e }));
    };
    // The first pass reads every key, to learn the tombstones already stored: at start, while the
    // node is quiet, not a minute later, when it read a burst's ~2,300 events in the middle of it.
    compact();
    const compaction = setInterval(compact, COMPACT_EVERY_MS);
    onClose({ name: 'compaction', close: () => clearInterval(compaction) });
    health.register('storage', () =>
      nc.isClosed()
        ? { ok: false, reason: 'NATS connection closed' }
        : Date.now() - lastCompaction > 5 * COMPACT_EVERY_MS
          ? { ok: false, reason: 'storage unreachable: no compaction pass for 5 min' }
          : { ok: true },
    );

    if (config.API_SCHEDULER) {
      const scheduler = new Scheduler({ storage, nodeName: config.NODE_NAME, logger, signal });
      let running = false;
      const tick = setInterval(() => {
        if (running) return;
        running = true;
        scheduler
          .pass()
          .catch((e: unknown) => logger.warn('scheduling pass failed', { err: e }))
          .finally(() => (running = false));
      }, SCHEDULE_EVERY_MS);
      onClose({ name: 'scheduler', close: () => clearInterval(tick) });
    }

    const server = createServer({ cert: creds.certPem, key: creds.keyPem });
    const address = (): AddressInfo => server.address() as AddressInfo;
    // Container logs come from the pod's node: cri-adapter serves its log files on the bus.
    const bus = new NatsBus(nc, await jetstreamManager(nc), { servers: config.NATS_URL, process: SERVICE, node: config.NODE_NAME, logger });
    const logs: PodLogSource = {
      read: (node, req) => bus.request(ContainerLogsRequest, ContainerLogsReply, Subjects.rpc.logs(node), req, { timeoutMs: LOG_READ_TIMEOUT_MS }),
      failure: (e) => {
        const message = e instanceof Error ? e.message : String(e);
        if (isBusError(e, 'NoResponders')) return { kind: 'NoResponders', message };
        if (isBusError(e, 'Remote') && e.remoteCode === 'NotFound') return { kind: 'NotFound', message };
        return { kind: 'Other', message };
      },
    };
    const handler = createApiHandler({ storage, token: creds.token, serverAddress: `${config.API_HOST}:${config.API_PORT}`, logger, signal, logs });
    server.on('request', handler);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.API_PORT, config.API_HOST, () => resolve());
    });
    onClose({
      name: 'https',
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    });
    const host = config.API_HOST === '0.0.0.0' ? '127.0.0.1' : config.API_HOST;
    const url = config.API_ADVERTISE_URL ?? `https://${host.includes(':') ? `[${host}]` : host}:${address().port}`;
    if (config.API_KUBECONFIG !== undefined) {
      const tmp = `${config.API_KUBECONFIG}.tmp`;
      await writeFile(tmp, kubeconfigYaml(url, creds), { mode: 0o600 });
      await rename(tmp, config.API_KUBECONFIG);
    }
    logger.info('apiserver listening', { url, port: address().port, kubeconfig: config.API_KUBECONFIG });
  },
});
