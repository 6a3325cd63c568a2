/**
 * The API server's credentials: a CA generated on first start, a serving certificate signed by it
 * for the addresses clients dial, and a bearer token; all kept in a directory (keys and token
 * 0600) and reused on restart, so a kubeconfig written once stays valid.
 *
 * Models what kubeadm's certs phase and a static token file give kube-apiserver, reduced to one
 * token and one serving certificate.
 */
import { randomBytes, webcrypto } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as never);

type CryptoKey = webcrypto.CryptoKey;

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000;

/** The server's TLS material and token. */
export interface ApiCredentials {
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
  readonly token: string;
}

async function keyToPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .trimEnd()}\n-----END PRIVATE KEY-----\n`;
}

async function pemToKey(pem: string): Promise<CryptoKey> {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  return webcrypto.subtle.importKey('pkcs8', der, ALG, true, ['sign']);
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

function serial(): string {
  return randomBytes(8).toString('hex');
}

/** Every name in `sans` the certificate must carry (localhost, loopback, the host name, extras). */
function subjectAltNames(extra: readonly string[]): x509.JsonGeneralName[] {
  const names = new Set(['localhost', '127.0.0.1', '::1', hostname(), ...extra]);
  return [...names].filter((n) => n !== '').map((n) => (isIP(n) !== 0 ? { type: 'ip', value: n } : { type: 'dns', value: n }));
}

function certCovers(pem: string, sans: readonly x509.JsonGeneralName[], caPem: string): boolean {
  try {
    const cert = new x509.X509Certificate(pem);
    if (cert.notAfter.getTime() < Date.now() + 24 * 3600 * 1000) return false;
    if (cert.issuer !== new x509.X509Certificate(caPem).subject) return false;
    const ext = cert.getExtension(x509.SubjectAlternativeNameExtension);
    const have = new Set((ext?.names.toJSON() ?? []).map((n) => `${n.type}:${n.value}`));
    return sans.every((n) => have.has(`${n.type}:${n.value}`));
  } catch {
    return false;
  }
}

/**
 * Loads the credentials from `dir`, creating what is missing: the CA (kept), the serving certificate
 * (re-issued when it does not cover `extraSans` or is about to expire) and the token (kept).
 */
export async function ensureCredentials(dir: string, extraSans: readonly string[] = []): Promise<ApiCredentials> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const paths = { ca: join(dir, 'ca.crt'), caKey: join(dir, 'ca.key'), cert: join(dir, 'apiserver.crt'), key: join(dir, 'apiserver.key'), token: join(dir, 'token') };
  const now = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + TEN_YEARS_MS);

  let caPem = await readIfExists(paths.ca);
  let caKeyPem = await readIfExists(paths.caKey);
  if (caPem === undefined || caKeyPem === undefined) {
    const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
    const ca = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: 'CN=splitlet-ca',
      notBefore: now,
      notAfter,
      keys: keys as never,
      signingAlgorithm: ALG,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    caPem = ca.toString('pem') + '\n';
    caKeyPem = await keyToPem(keys.privateKey);
    await writeFile(paths.caKey, caKeyPem, { mode: 0o600 });
    await writeFile(paths.ca, caPem, { mode: 0o644 });
  }

  const sans = subjectAltNames(extraSans);
  let certPem = await readIfExists(paths.cert);
  let keyPem = await readIfExists(paths.key);
  if (certPem === undefined || keyPem === undefined || !certCovers(certPem, sans, caPem)) {
    const ca = new x509.X509Certificate(caPem);
    const caKey = await pemToKey(caKeyPem);
    const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: 'CN=splitlet-apiserver',
      issuer: ca.subject,
      notBefore: now,
      notAfter,
      signingKey: caKey as never,
      publicKey: keys.publicKey as never,
      signingAlgorithm: ALG,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
        new x509.SubjectAlternativeNameExtension(sans, false),
      ],
    });
    certPem = cert.toString('pem') + '\n';
    keyPem = await keyToPem(keys.privateKey);
    await writeFile(paths.key, keyPem, { mode: 0o600 });
    await writeFile(paths.cert, certPem, { mode: 0o644 });
  }

  let token = (await readIfExists(paths.token))?.trim();
  if (token === undefined || token === '') {
    token = randomBytes(32).toString('base64url');
    await writeFile(paths.token, token + '\n', { mode: 0o600 });
  }
  return { caPem, certPem, keyPem, token };
}

/** A kubeconfig for `server` with the CA and the token (context `splitlet`, namespace default). */
export function kubeconfigYaml(server: string, creds: Pick<ApiCredentials, 'caPem' | 'token'>, name = 'splitlet'): string {
  const ca = Buffer.from(creds.caPem).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${name}`,
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${ca}`,
    'users:',
    `- name: ${name}-admin`,
    '  user:',
    `    token: ${creds.token}`,
    'contexts:',
    `- name: ${name}`,
    '  context:',
    `    cluster: ${name}`,
    `    user: ${name}-admin`,
    '    namespace: default',
    `current-context: ${name}`,
    '',
  ].join('\n');
}
