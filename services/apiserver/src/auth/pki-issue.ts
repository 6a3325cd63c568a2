/**
 * Issues the API server's CA and serving certificate with @peculiar/x509. The library and its
 * ASN.1 stack hold ~10 MiB of a process's memory for as long as it runs, and a node needs them only
 * when a certificate is missing or must be re-issued, so they run in a short-lived process of their
 * own (pki-issue-main.ts, started by pki.ts), never in the API server.
 */
import { randomBytes, webcrypto } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { credentialPaths, type IssueRequest } from './pki.js';

x509.cryptoProvider.set(webcrypto as never);

type CryptoKey = webcrypto.CryptoKey;

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000;

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

const serial = (): string => randomBytes(8).toString('hex');

/** Writes a new serving certificate and key into `req.dir`, and first a new CA when `req.ca`. */
export async function issueCredentials(req: IssueRequest): Promise<void> {
  const paths = credentialPaths(req.dir);
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + TEN_YEARS_MS);
  if (req.ca) {
    const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
    const ca = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: 'CN=splitlet-ca',
      notBefore,
      notAfter,
      keys: keys as never,
      signingAlgorithm: ALG,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    await writeFile(paths.caKey, await keyToPem(keys.privateKey), { mode: 0o600 });
    await writeFile(paths.ca, ca.toString('pem') + '\n', { mode: 0o644 });
  }
  const ca = new x509.X509Certificate(await readFile(paths.ca, 'utf8'));
  const caKey = await pemToKey(await readFile(paths.caKey, 'utf8')).catch((e: unknown) => {
    throw new Error(`${paths.caKey} is not a PKCS #8 P-256 private key: ${e instanceof Error ? e.message : String(e)}`);
  });
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: 'CN=splitlet-apiserver',
    issuer: ca.subject,
    notBefore,
    notAfter,
    signingKey: caKey as never,
    publicKey: keys.publicKey as never,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
      new x509.SubjectAlternativeNameExtension(
        req.sans.map((n) => ({ ...n })),
        false,
      ),
    ],
  });
  await writeFile(paths.key, await keyToPem(keys.privateKey), { mode: 0o600 });
  await writeFile(paths.cert, cert.toString('pem') + '\n', { mode: 0o644 });
}
