/**
 * The process pki.ts starts to issue certificates: `node pki-issue-main.js '<IssueRequest as JSON>'`.
 * Exits 0 once the files are written; otherwise prints why on stderr and exits 1.
 */
import { issueCredentials } from './pki-issue.js';
import type { IssueRequest } from './pki.js';

try {
  await issueCredentials(JSON.parse(process.argv[2] ?? '') as IssueRequest);
} catch (e) {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
}
