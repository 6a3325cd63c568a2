import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A key pair and certificate in PEM files. */
export interface SelfSignedCert {
  readonly keyFile: string;
  readonly certFile: string;
  /** The certificate's PEM (a client's CA). */
  readonly cert: Buffer;
}

/**
 * A P-256 certificate for `127.0.0.1` (CN and IP SAN), valid a day, made by `openssl` into `dir`
 * (`key.pem`, `cert.pem`): for a TLS test server a client verifies.
 */
export function selfSignedCert(dir: string): SelfSignedCert {
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  return { keyFile, certFile, cert: readFileSync(certFile) };
}
