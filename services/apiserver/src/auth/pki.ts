/**
 * The API server's credentials: a CA generated on first start, a serving certificate signed by it
 * for the addresses clients dial, and a bearer token; all kept in a directory (keys and token
 * 0600) and reused on restart, so a kubeconfig written once stays valid.
 *
 * Models what kubeadm's certs phase and a static token file give kube-apiserver, reduced to one
 * token and one serving certificate.
 */
import { execFile } from 'node:child_process';
import { X509Certificate, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The server's TLS material and token. */
export interface ApiCredentials {
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
  readonly token: string;
}

/** A name a serving certificate carries. */
export interface SubjectAltName {
  readonly type: 'dns' | 'ip';
  readonly value: string;
}

/** Where the credentials live in their directory. */
export function credentialPaths(dir: string): { ca: string; caKey: string; cert: string; key: string; token: string } {
  return { ca: join(dir, 'ca.crt'), caKey: join(dir, 'ca.key'), cert: join(dir, 'apiserver.crt'), key: join(dir, 'apiserver.key'), token: join(dir, 'token') };
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** Every name the certificate must carry (localhost, loopback, the host name, extras). */
export function subjectAltNames(extra: readonly string[]): SubjectAltName[] {
  const names = new Set(['localhost', '127.0.0.1', '::1', hostname(), ...extra]);
  return [...names].filter((n) => n !== '').map((n) => (isIP(n) !== 0 ? { type: 'ip', value: n } : { type: 'dns', value: n }));
}

/** Whether `pem` was issued by `caPem`, is valid for more than a day and carries every name of `sans`. */
export function certCovers(pem: string, sans: readonly SubjectAltName[], caPem: string): boolean {
  try {
    const cert = new X509Certificate(pem);
    const ca = new X509Certificate(caPem);
    if (new Date(cert.validTo).getTime() < Date.now() + 24 * 3600 * 1000) return false;
    if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey)) return false;
    // "DNS:localhost, IP Address:127.0.0.1, …"; an IP is compared as an address (checkIP), a DNS name exactly.
    const dns = new Set((cert.subjectAltName ?? '').split(', ').flatMap((e) => (e.startsWith('DNS:') ? [e.slice(4).toLowerCase()] : [])));
    return sans.every((n) => (n.type === 'ip' ? cert.checkIP(n.value) !== undefined : dns.has(n.value.toLowerCase())));
  } catch {
    return false;
  }
}

/** What to issue in a credentials directory. */
export interface IssueRequest {
  readonly dir: string;
  /** A new CA (and so a new serving certificate); otherwise the CA in `dir` signs. */
  readonly ca: boolean;
  /** The names the serving certificate carries. */
  readonly sans: readonly SubjectAltName[];
}

/** Issues what a request asks into its directory (the CA when `ca`, then the serving certificate). */
export type Issuer = (req: IssueRequest) => Promise<void>;

/**
 * Issues in a process of its own (pki-issue-main), with the same Node, so @peculiar/x509 never
 * loads into the API server (~10 MiB it would hold for good). From the TypeScript sources (tests),
 * the child loads them through tsx like its parent.
 */
export const issueInChildProcess: Issuer = (req) => {
  const fromSource = import.meta.url.endsWith('.ts');
  const main = fileURLToPath(new URL(`./pki-issue-main.${fromSource ? 'ts' : 'js'}`, import.meta.url));
  const args = [...(fromSource ? ['--import', import.meta.resolve('tsx')] : []), main, JSON.stringify(req)];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { timeout: 60_000 }, (err, _stdout, stderr) => {
      if (err === null) resolve();
      else reject(new Error(`issuing the API server's certificates in ${req.dir} failed: ${stderr.trim() || err.message}`));
    });
  });
};

/**
 * Loads the credentials from `dir`, creating what is missing: the CA (kept), the serving certificate
 * (re-issued when it does not cover `extraSans` or is about to expire) and the token (kept).
 */
export async function ensureCredentials(dir: string, extraSans: readonly string[] = [], issue: Issuer = issueInChildProcess): Promise<ApiCredentials> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const paths = credentialPaths(dir);
  const sans = subjectAltNames(extraSans);
  const read = async (): Promise<Record<'caPem' | 'caKeyPem' | 'certPem' | 'keyPem', string | undefined>> => ({
    caPem: await readIfExists(paths.ca),
    caKeyPem: await readIfExists(paths.caKey),
    certPem: await readIfExists(paths.cert),
    keyPem: await readIfExists(paths.key),
  });
  let f = await read();
  const newCa = f.caPem === undefined || f.caKeyPem === undefined;
  if (newCa || f.certPem === undefined || f.keyPem === undefined || !certCovers(f.certPem, sans, f.caPem!)) {
    await issue({ dir, ca: newCa, sans });
    f = await read();
  }
  const { caPem, certPem, keyPem } = f;
  if (caPem === undefined || certPem === undefined || keyPem === undefined || f.caKeyPem === undefined) {
    throw new Error(`the API server's credentials in ${dir} are incomplete after issuing them`);
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
