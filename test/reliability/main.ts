/**
 * `npm run reliability [-- --long] [-- --only chaos,fuzz]`: runs every suite in
 * `test/reliability/suites/*.ts` one after the other, prints each one's table and exits non-zero if
 * any is not ok. `--long` runs the longer mode (more trials); the default is the size CI runs.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { formatTable, type SuiteOptions, type SuiteResult } from './suite.ts';

interface SuiteModule {
  run(opts: SuiteOptions): Promise<SuiteResult>;
}

function isSuite(m: unknown): m is SuiteModule {
  return typeof m === 'object' && m !== null && typeof (m as { run?: unknown }).run === 'function';
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { long: { type: 'boolean', default: false }, only: { type: 'string' } } });
  const only = values.only?.split(',').map((s) => s.trim());
  const dir = join(import.meta.dirname, 'suites');
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .sort()
    .filter((f) => only === undefined || only.includes(f.replace(/\.ts$/, '')));
  if (files.length === 0) {
    process.stderr.write(`no suite to run in ${dir}${only ? ` named ${only.join(', ')}` : ''}\n`);
    return 2;
  }
  const mode = values.long ? 'long' : 'ci';
  const results: SuiteResult[] = [];
  for (const f of files) {
    const name = f.replace(/\.ts$/, '');
    const t0 = Date.now();
    process.stdout.write(`\n== ${name} (${mode}) ==\n`);
    const m: unknown = await import(pathToFileURL(join(dir, f)).href);
    let r: SuiteResult;
    if (!isSuite(m)) {
      r = { title: name, columns: ['error'], rows: [[`${f} exports no run(opts)`]], ok: false };
    } else {
      try {
        r = await m.run({ mode, log: (line) => process.stdout.write(`  ${line}\n`) });
      } catch (e) {
        r = { title: name, columns: ['error'], rows: [[e instanceof Error ? (e.stack ?? e.message) : String(e)]], ok: false };
      }
    }
    results.push(r);
    process.stdout.write(`${formatTable(r)}\n(${name}: ${((Date.now() - t0) / 1000).toFixed(0)} s)\n`);
  }
  process.stdout.write('\n== summary ==\n');
  for (const r of results) process.stdout.write(`${r.ok ? 'ok    ' : 'FAILED'}  ${r.title}\n`);
  return results.every((r) => r.ok) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
