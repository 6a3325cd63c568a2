/**
 * The nats-server configuration of `splitlet up`: where it listens, its JetStream store and one
 * user per identity with least-privilege permissions (`identityPermissions` of `@splitlet/bus`),
 * each with a random password generated at every `up`.
 *
 * Two files in the state dir, both mode 0600 (only the user who ran `splitlet up` reads them):
 * - `nats.conf`: what nats-server runs with (`-c`), also when its guard restarts it;
 * - `nats-credentials.json`: `{ "<identity>": { "user", "password" } }`, from which `up` hands each
 *   process its own pair (`NATS_USER` / `NATS_PASSWORD`) and the CLI takes the `cli` one.
 *
 * {@link renderNatsServerConfig} is the one place the config text is assembled.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { IDENTITIES, identityPermissions, renderAuthorization, type Identity, type NatsCredential } from '@splitlet/bus';

/** What the nats-server config says. */
export interface NatsServerConfig {
  readonly host: string;
  readonly port: number;
  readonly storeDir: string;
  /** The `authorization` block (renderAuthorization), or undefined for no authentication. */
  readonly authorization: string | undefined;
}

/** The nats-server config file's text. */
export function renderNatsServerConfig(c: NatsServerConfig): string {
  const q = (s: string): string => JSON.stringify(s);
  return [
    '# Written by `splitlet up` at every start (random passwords); do not edit.',
    `listen: ${q(`${c.host}:${c.port}`)}`,
    `jetstream { store_dir: ${q(c.storeDir)} }`,
    c.authorization ?? '',
  ].join('\n');
}

/** A fresh random password (192 bits, URL-safe). */
export function randomPassword(): string {
  return randomBytes(24).toString('base64url');
}

/** New credentials for every identity: the user name is the identity, the password random. */
export function generateCredentials(): Map<Identity, NatsCredential> {
  return new Map(IDENTITIES.map((id) => [id, { user: id, password: randomPassword() }]));
}

/** The credentials file of a state dir. */
export function credentialsFile(stateRoot: string): string {
  return join(stateRoot, 'nats-credentials.json');
}

/** The nats-server config file of a state dir. */
export function natsConfigFile(stateRoot: string): string {
  return join(stateRoot, 'nats.conf');
}

/** Writes `text` to `file` with mode 0600, atomically (never readable by others, even briefly). */
export function writePrivateFile(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** Writes the credentials file (0600). */
export function writeCredentials(stateRoot: string, creds: ReadonlyMap<Identity, NatsCredential>): void {
  writePrivateFile(credentialsFile(stateRoot), `${JSON.stringify(Object.fromEntries(creds), null, 2)}\n`);
}

const CredentialsJson = z.record(z.string(), z.object({ user: z.string().min(1), password: z.string().min(1) }));

/**
 * One identity's credentials from a state dir's credentials file; undefined when there is no file
 * (a `splitlet up` against an external NATS_URL, or one from before authentication).
 */
export function readCredential(stateRoot: string, id: Identity): NatsCredential | undefined {
  let raw: string;
  try {
    raw = readFileSync(credentialsFile(stateRoot), 'utf8');
  } catch {
    return undefined;
  }
  const parsed = CredentialsJson.safeParse(JSON.parse(raw));
  if (!parsed.success) throw new Error(`${credentialsFile(stateRoot)} is not a valid credentials file: ${parsed.error.message}`);
  return parsed.data[id];
}

/** The identity a `splitlet up` process connects as: its process name without the replica number. */
export function identityOf(processName: string): Identity | undefined {
  const base = processName.replace(/-\d+$/, '');
  return (IDENTITIES as readonly string[]).includes(base) ? (base as Identity) : undefined;
}

/**
 * Writes `nats.conf` (0600) with fresh credentials for every identity, saved beside it (0600),
 * and returns them.
 */
export function writeNatsAuthConfig(o: { stateRoot: string; host: string; port: number; storeDir: string; node: string; partitions?: number | undefined }): {
  configFile: string;
  credentials: Map<Identity, NatsCredential>;
} {
  const credentials = generateCredentials();
  writeCredentials(o.stateRoot, credentials);
  const configFile = natsConfigFile(o.stateRoot);
  writePrivateFile(
    configFile,
    renderNatsServerConfig({ host: o.host, port: o.port, storeDir: o.storeDir, authorization: renderAuthorization(credentials, { node: o.node, partitions: o.partitions }) }),
  );
  return { configFile, credentials };
}

/**
 * `splitlet nats-config --out DIR`: the same identities for a compose stack or any NATS run outside
 * `splitlet up`. Writes `DIR/nats.conf` (0600: listen address, JetStream store, monitoring port,
 * the users) and one password file per identity, `DIR/users/<identity>` (0600, owned by `ownerUid`
 * when given, so processes running as that user read theirs). Existing files are kept (restarts
 * keep their passwords) unless `rotate`. Returns what it did.
 */
export function writeNatsConfigDir(o: {
  dir: string;
  node: string | undefined;
  /** The node's pod-worker partitions. @default DEFAULT_PARTITIONS */
  partitions?: number | undefined;
  listen: string;
  storeDir: string;
  monitorPort: number | undefined;
  serverName: string | undefined;
  ownerUid: number | undefined;
  rotate: boolean;
}): 'written' | 'kept' {
  const conf = join(o.dir, 'nats.conf');
  const users = join(o.dir, 'users');
  if (!o.rotate && existsSync(conf)) return 'kept';
  mkdirSync(users, { recursive: true, mode: 0o755 });
  const credentials = generateCredentials();
  for (const [id, c] of credentials) {
    const f = join(users, id);
    writePrivateFile(f, c.password);
    if (o.ownerUid !== undefined) chownSync(f, o.ownerUid, -1);
  }
  const [host, port] = splitListen(o.listen);
  const extra = [
    ...(o.monitorPort !== undefined ? [`http_port: ${o.monitorPort}`] : []),
    ...(o.serverName !== undefined ? [`server_name: ${JSON.stringify(o.serverName)}`] : []),
  ].join('\n');
  const text = renderNatsServerConfig({ host, port, storeDir: o.storeDir, authorization: renderAuthorization(credentials, { node: o.node, partitions: o.partitions }) });
  writePrivateFile(conf, `${text}\n${extra}\n`);
  return 'written';
}

function splitListen(listen: string): [string, number] {
  const i = listen.lastIndexOf(':');
  const port = Number(listen.slice(i + 1));
  if (i < 0 || !Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--listen must be HOST:PORT, got ${JSON.stringify(listen)}`);
  return [listen.slice(0, i), port];
}

/** The environment variable the NATS Helm chart's container gets an identity's password in. */
function passwordVar(id: Identity): string {
  return `NATS_PW_${id.toUpperCase().replaceAll('-', '_')}`;
}

/**
 * Values for the official NATS Helm chart (1.x) giving the server the same users and permissions:
 * `config.merge.authorization.users`, each password a variable (`<< $VAR >>`, the chart's literal
 * syntax) filled from the Secret `splitlet-nats-users` (one key per identity) through
 * `container.env`. No password is in the file. `splitlet nats-config --helm-values FILE` writes it
 * (k8s/nats/auth-values.yaml is its output for the base's node).
 */
export function renderHelmAuthValues(node: string | undefined, partitions?: number): string {
  const q = (s: string): string => JSON.stringify(s);
  const lines = [
    '# Generated by `splitlet nats-config --helm-values` (services/cli/src/up/nats-config.ts); do not edit.',
    '# The NATS users of splitlet, one per process, with least-privilege permissions (docs/architecture.md,',
    '# "Identities and permissions"). Passwords come from the Secret splitlet-nats-users (k8s/README.md).',
    'config:',
    '  merge:',
    '    authorization:',
    '      users:',
  ];
  for (const id of IDENTITIES) {
    const p = identityPermissions(id, { node, partitions });
    lines.push(`        - user: ${q(id)}`, `          password: << $${passwordVar(id)} >>`, '          permissions:');
    lines.push(`            publish: {allow: [${[...new Set(p.publish)].map(q).join(', ')}]}`);
    lines.push(`            subscribe: {allow: [${[...new Set(p.subscribe)].map(q).join(', ')}]}`);
    if (p.allowResponses) lines.push('            allow_responses: {max: 100000, expires: "1h"}');
  }
  lines.push('container:', '  env:');
  for (const id of IDENTITIES) lines.push(`    ${passwordVar(id)}:`, '      valueFrom:', `        secretKeyRef: {name: splitlet-nats-users, key: ${q(id)}}`);
  return `${lines.join('\n')}\n`;
}
