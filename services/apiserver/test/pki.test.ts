/**
 * The API server's credentials: the first start issues a CA and a serving certificate in a process
 * of its own (the real one, pki-issue-main, through the same Node) that node:crypto verifies; a
 * restart reuses them without issuing; a new name re-issues the serving certificate under the same
 * CA; a certificate from another CA or a broken file is replaced; a failed issue names the directory;
 * the process that calls it never loads @peculiar/x509.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { certCovers, credentialPaths, ensureCredentials, issueInChildProcess, subjectAltNames, type IssueRequest, type Issuer } from '../src/auth/pki.js';

const dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'sl-pki-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The real issuer, counting its calls. */
function counting(): { issue: Issuer; calls: IssueRequest[] } {
  const calls: IssueRequest[] = [];
  return {
    calls,
    issue: async (req) => {
      calls.push(req);
      await issueInChildProcess(req);
    },
  };
}

describe('ensureCredentials', () => {
  it('issues a CA and a serving certificate on first start, in its own process, that verify with node:crypto', async () => {
    const dir = tempDir();
    const c = counting();
    const creds = await ensureCredentials(dir, ['node-a.example', '10.1.2.3'], c.issue);
    assert.equal(c.calls.length, 1);
    assert.equal(c.calls[0]!.ca, true);
    const ca = new X509Certificate(creds.caPem);
    const cert = new X509Certificate(creds.certPem);
    assert.ok(ca.ca, 'the CA is a CA');
    assert.ok(cert.checkIssued(ca) && cert.verify(ca.publicKey), 'the serving certificate is signed by the CA');
    assert.equal(cert.checkHost('node-a.example'), 'node-a.example');
    assert.equal(cert.checkHost('localhost'), 'localhost');
    assert.equal(cert.checkIP('10.1.2.3'), '10.1.2.3');
    assert.equal(cert.checkIP('::1'), '::1');
    assert.ok(certCovers(creds.certPem, subjectAltNames(['node-a.example', '10.1.2.3']), creds.caPem));
    const p = credentialPaths(dir);
    for (const secret of [p.caKey, p.key, p.token]) assert.equal(statSync(secret).mode & 0o777, 0o600, `${secret} is 0600`);
    assert.match(creds.keyPem, /^-----BEGIN PRIVATE KEY-----\n/);
    assert.ok(creds.token.length >= 40);
  });

  it('reuses everything on restart without issuing, and re-issues only the serving certificate for a new name', async () => {
    const dir = tempDir();
    const c = counting();
    const first = await ensureCredentials(dir, [], c.issue);
    const again = await ensureCredentials(dir, [], c.issue);
    assert.equal(c.calls.length, 1, 'a restart issues nothing');
    assert.deepEqual(again, first);

    const widened = await ensureCredentials(dir, ['api.node-b.example'], c.issue);
    assert.equal(c.calls.length, 2);
    assert.equal(c.calls[1]!.ca, false, 'the CA is kept');
    assert.equal(widened.caPem, first.caPem);
    assert.equal(widened.token, first.token);
    assert.notEqual(widened.certPem, first.certPem);
    assert.equal(new X509Certificate(widened.certPem).checkHost('api.node-b.example'), 'api.node-b.example');
  });

  it('replaces a serving certificate another CA signed, or a file that is not a certificate', async () => {
    const dir = tempDir();
    const other = tempDir();
    const c = counting();
    const mine = await ensureCredentials(dir, [], c.issue);
    const foreign = await ensureCredentials(other, [], c.issue);
    assert.equal(certCovers(foreign.certPem, subjectAltNames([]), mine.caPem), false);
    writeFileSync(credentialPaths(dir).cert, foreign.certPem);
    const fixed = await ensureCredentials(dir, [], c.issue);
    assert.ok(new X509Certificate(fixed.certPem).checkIssued(new X509Certificate(mine.caPem)));

    writeFileSync(credentialPaths(dir).cert, 'not a certificate\n');
    const n = c.calls.length;
    const again = await ensureCredentials(dir, [], c.issue);
    assert.equal(c.calls.length, n + 1);
    assert.ok(new X509Certificate(again.certPem).verify(new X509Certificate(mine.caPem).publicKey));
  });

  it('names the directory and the cause when issuing fails', async () => {
    const dir = tempDir();
    // A CA key that is not a key: the CA is kept (both files exist), so the child must sign with it and fails.
    await ensureCredentials(dir);
    const p = credentialPaths(dir);
    writeFileSync(p.caKey, '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n');
    rmSync(p.cert);
    await assert.rejects(ensureCredentials(dir), (e: Error) =>
      e.message.startsWith(`issuing the API server's certificates in ${dir} failed: ${p.caKey} is not a PKCS #8 P-256 private key`),
    );
    assert.equal(readFileSync(p.ca, 'utf8').startsWith('-----BEGIN CERTIFICATE-----'), true, 'the CA is left as it was');
  });

  it('keeps @peculiar/x509 out of the process that calls it (it only loads in the issuing child)', async () => {
    // A fresh process records every module it resolves, calls `module` from the sources, and says
    // whether @peculiar/x509 was among them and whether the certificate was written.
    const run = (module: string, call: string, arg: unknown, dir: string): Promise<{ x509: boolean; cert: boolean }> => {
      const script = `
        import { registerHooks } from 'node:module';
        import { existsSync } from 'node:fs';
        const seen = [];
        registerHooks({ resolve(spec, ctx, next) { const r = next(spec, ctx); seen.push(r.url); return r; } });
        const m = await import(${JSON.stringify(new URL(module, import.meta.url).href)});
        await m.${call}(${JSON.stringify(arg)});
        process.stdout.write(JSON.stringify({ x509: seen.some((u) => u.includes('@peculiar/x509')), cert: existsSync(${JSON.stringify(join(dir, 'apiserver.crt'))}) }));`;
      return new Promise((resolve, reject) => {
        execFile(
          process.execPath,
          ['--import', import.meta.resolve('tsx'), '--input-type=module', '-e', script],
          { timeout: 120_000, cwd: fileURLToPath(new URL('.', import.meta.url)) },
          (err, stdout, stderr) => (err === null ? resolve(JSON.parse(stdout) as { x509: boolean; cert: boolean }) : reject(new Error(`${err.message}\n${stderr}`))),
        );
      });
    };
    const fresh = tempDir();
    assert.deepEqual(await run('../src/auth/pki.ts', 'ensureCredentials', fresh, fresh), { x509: false, cert: true });
    // The check sees the library when a process does load it (the issuing code itself).
    const dir = tempDir();
    await ensureCredentials(dir);
    rmSync(join(dir, 'apiserver.crt'));
    assert.deepEqual(await run('../src/auth/pki-issue.ts', 'issueCredentials', { dir, ca: false, sans: [] }, dir), { x509: true, cert: true });
  });
});
