/**
 * kubectl against a whole node: `splitlet up --runtime sim` (embedded API server, scheduler, the
 * node's processes, the simulator). What needs the node behind the API server:
 * - `get pods -w`: the current rows first, then the changes (Pending → Running) as they happen;
 * - `logs` / `logs -f` read from the node over the bus (tail, timestamps, since, previous, error
 *   texts), `-f` streaming until the container ends;
 * - pods/status validation: a Succeeded pod cannot be patched back to Running (422, status.phase);
 * - events as client-go's recorder posts them: a crash-looping container's BackOff is one Event
 *   whose count goes up.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { eventually } from '@splitlet/testkit';
import { KUBECTL, kubectlSkipReason, startSplitlet, type Instance } from './harness.ts';

const run = promisify(execFile);
const NODE = 'kubectl-node';
const LINES = 40;

const skip = await kubectlSkipReason();
if (skip !== undefined) process.stdout.write(`# skipping: ${skip}\n`);

function podJson(name: string, command: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'app', image: 'busybox:1.36', command: ['sh', '-c', command] }], ...extra },
  });
}

/** A long-running kubectl (get -w, logs -f): its output as it comes, with when each piece came. */
function spawnKubectl(kubeconfig: string, args: string[]): { out: () => string; chunks: { at: number; text: string }[]; exited: Promise<number | null>; kill: () => void } {
  const child = spawn(KUBECTL, ['--kubeconfig', kubeconfig, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: { at: number; text: string }[] = [];
  let err = '';
  child.stdout.on('data', (c: Buffer) => chunks.push({ at: Date.now(), text: c.toString() }));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    out: () => chunks.map((c) => c.text).join('') + (err === '' ? '' : `\n[stderr] ${err}`),
    chunks,
    exited,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

describe('kubectl → splitlet up (sim): get -w, logs, status validation, events', { skip, timeout: 600_000 }, () => {
  let s: Instance;
  let kubeconfig: string;
  const k = async (args: string[], input?: string): Promise<{ code: number; out: string; err: string }> => {
    try {
      const p = run(KUBECTL, ['--kubeconfig', kubeconfig, ...args], { timeout: 60_000 });
      if (input !== undefined) p.child.stdin?.end(input);
      const r = await p;
      return { code: 0, out: r.stdout, err: r.stderr };
    } catch (e) {
      const x = e as { code?: number; stdout?: string; stderr?: string };
      return { code: typeof x.code === 'number' ? x.code : 1, out: x.stdout ?? '', err: x.stderr ?? '' };
    }
  };
  const phase = async (name: string): Promise<string> => (await k(['get', 'pod', name, '-o', 'jsonpath={.status.phase}'])).out;

  before(async () => {
    s = await startSplitlet({ nodeName: NODE, podWorkers: 2 });
    kubeconfig = join(s.stateDir, 'kubeconfig');
    await eventually(async () => (await k(['get', 'nodes', NODE, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'])).out === 'True', {
      timeoutMs: 120_000,
      message: `node ${NODE} Ready`,
    });
  });
  after(async () => {
    assert.equal(await s?.stop(), 0);
  });

  test('get pods -w prints the current rows first, then a new pod going Pending → Running', async () => {
    assert.equal((await k(['apply', '-f', '-'], podJson('early', 'sleep 3600'))).code, 0);
    await eventually(async () => (await phase('early')) === 'Running', { timeoutMs: 120_000, message: 'early Running' });
    const w = spawnKubectl(kubeconfig, ['get', 'pods', '-w']);
    try {
      await eventually(() => /^early\s/m.test(w.out()), { timeoutMs: 60_000, message: `the current row; got:\n${w.out()}` });
      const lines = w.out().split('\n');
      assert.match(lines[0] ?? '', /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/, w.out());
      assert.match(lines[1] ?? '', /^early\s+1\/1\s+Running\s+0\s+\d+s$/, w.out());
      assert.equal(
        (await k(['apply', '-f', '-'], podJson('printer', `i=1; while [ $i -le ${LINES} ]; do echo line $i; i=$((i+1)); sleep 1; done`, { restartPolicy: 'Never' }))).code,
        0,
      );
      await eventually(() => /^printer\s+1\/1\s+Running\s+0\s+\d+s$/m.test(w.out()), { timeoutMs: 120_000, message: `printer Running in the watch; got:\n${w.out()}` });
      const rows = w
        .out()
        .split('\n')
        .filter((l) => l.startsWith('printer '))
        .map((l) => l.split(/\s+/)[2]);
      assert.equal(rows[0], 'Pending', w.out());
      assert.ok(rows.indexOf('Running') > rows.indexOf('Pending'), w.out());
    } finally {
      w.kill();
    }
  });

  test('logs -f streams the lines as the container prints them and ends when it exits', async () => {
    await eventually(async () => (await phase('printer')) === 'Running', { timeoutMs: 120_000, message: 'printer Running' });
    const started = Date.now();
    const f = spawnKubectl(kubeconfig, ['logs', '-f', 'printer']);
    const code = await f.exited;
    assert.equal(code, 0, f.out());
    const expected = Array.from({ length: LINES }, (_, i) => `line ${i + 1}\n`).join('');
    assert.equal(f.out(), expected);
    // Streamed: the first lines came well before the last (the container prints one a second).
    assert.ok(f.chunks.length > 1, `one chunk only: ${JSON.stringify(f.chunks)}`);
    const first = f.chunks[0]?.at ?? 0;
    const last = f.chunks[f.chunks.length - 1]?.at ?? 0;
    assert.ok(last - first >= 3000, `lines did not arrive over time: ${JSON.stringify(f.chunks.map((c) => [c.at - started, c.text.length]))}`);
    await eventually(async () => (await phase('printer')) === 'Succeeded', { timeoutMs: 60_000, message: 'printer Succeeded' });
  });

  test('logs: all lines, --tail, --timestamps, --since-time, and the error texts of the API server and the kubelet', async () => {
    const all = await k(['logs', 'printer']);
    assert.equal(all.code, 0, all.err);
    assert.equal(all.out, Array.from({ length: LINES }, (_, i) => `line ${i + 1}\n`).join(''));
    assert.equal((await k(['logs', 'printer', '--tail=2'])).out, `line ${LINES - 1}\nline ${LINES}\n`);
    const ts = await k(['logs', 'printer', '--tail=1', '--timestamps']);
    assert.match(ts.out, new RegExp(`^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z line ${LINES}\\n$`));
    const future = new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    assert.deepEqual(await k(['logs', 'printer', `--since-time=${future}`]), { code: 0, out: '', err: '' });
    assert.equal((await k(['logs', 'printer', '--since=1h'])).out, all.out);

    const raw = async (query: string): Promise<string> => (await k(['get', '--raw', `/api/v1/namespaces/default/pods/printer/log?${query}`])).err;
    assert.match(await raw('container=nope'), /Error from server \(BadRequest\): container nope is not valid for pod printer/);
    assert.match(await raw('tailLines=-3'), /The PodLogOptions "printer" is invalid: tailLines: Invalid value: -3: must be greater than or equal to 0/);
    const prev = await k(['logs', 'printer', '--previous']);
    assert.notEqual(prev.code, 0);
    assert.match(prev.err, /Error from server \(BadRequest\): previous terminated container "app" in pod "printer" not found/);
    const missing = await k(['logs', 'nosuchpod']);
    assert.match(missing.err, /error from server \(NotFound\): pods "nosuchpod" not found in namespace "default"/);

    // A pod the scheduler leaves alone (another scheduler's) has no node: no content (204), as kube-apiserver's LogLocation.
    assert.equal((await k(['apply', '-f', '-'], podJson('unbound', 'sleep 3600', { schedulerName: 'elsewhere' }))).code, 0);
    assert.deepEqual(await k(['logs', 'unbound']), { code: 0, out: '', err: '' });
  });

  test('pods/status: a Succeeded pod is not patched back to Running; a terminated container of a Never pod stays terminated', async () => {
    const back = await k(['patch', 'pod', 'printer', '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Running"}}']);
    assert.notEqual(back.code, 0);
    assert.match(back.err, /The Pod "printer" is invalid: status\.phase: Forbidden: may not be changed from terminal phase "Succeeded" to "Running"/);
    const revived = await k([
      'patch',
      'pod',
      'printer',
      '--subresource=status',
      '--type=strategic',
      '-p',
      '{"status":{"containerStatuses":[{"name":"app","state":{"running":{"startedAt":"2026-01-01T00:00:00Z"},"terminated":null}}]}}',
    ]);
    assert.notEqual(revived.code, 0);
    assert.match(revived.err, /status\.containerStatuses\[0\]\.state: Forbidden: may not be transitioned to non-terminated state/);
    assert.equal(await phase('printer'), 'Succeeded');
  });

  test('a crash-looping container: logs --previous, and its BackOff events are one Event counted up', async () => {
    assert.equal((await k(['apply', '-f', '-'], podJson('crash', 'echo crashing; exit 1'))).code, 0);
    const backOff = async (): Promise<{ count: number; name: string }[]> => {
      const r = await k(['get', 'events', '--field-selector', 'involvedObject.name=crash,reason=BackOff', '-o', 'json']);
      return ((JSON.parse(r.out || '{"items":[]}') as { items: { count?: number; metadata: { name: string } }[] }).items ?? []).map((e) => ({
        count: e.count ?? 1,
        name: e.metadata.name,
      }));
    };
    const events = await eventually(
      async () => {
        const ev = await backOff();
        return ev.length === 1 && ev[0]!.count >= 2 ? ev : undefined;
      },
      { timeoutMs: 240_000, message: 'one BackOff event with count >= 2' },
    ).catch(async (e: unknown) => {
      throw new Error(`BackOff events: ${JSON.stringify(await backOff())}`, { cause: e });
    });
    assert.match(events[0]!.name, /^crash\.[0-9a-f]+$/);
    const table = await k(['get', 'events', '--field-selector', 'involvedObject.name=crash']);
    assert.match(table.out.split('\n')[0] ?? '', /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/);
    const rows = table.out.split('\n').filter((l) => /\sBackOff\s/.test(l));
    assert.equal(rows.length, 1, table.out);
    assert.match(rows[0] ?? '', /Warning\s+BackOff\s+pod\/crash\s+Back-off restarting failed container app in pod crash_default\(/);
    const wide = await k(['get', 'events', '--field-selector', 'involvedObject.name=crash,reason=BackOff', '-o', 'wide']);
    assert.match(wide.out.split('\n')[0] ?? '', /COUNT\s+NAME$/);
    assert.equal((await k(['logs', 'crash', '--previous'])).out, 'crashing\n');
  });
});
