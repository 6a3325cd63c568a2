/**
 * The CLI printers against kubectl's own expectations: apimachinery's HumanDuration table, kubectl's
 * printPod STATUS / READY / RESTARTS rules (printers_test.go TestPrintPod and friends), the table
 * layout, describe's sections, and the trace waterfall's ordering and error marking.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeEvent, Pod, SpanRecord } from '@splitlet/api';
import { aContainer, aPod, aRunningStatus, aTerminatedStatus, aWaitingStatus } from '@splitlet/kube/testing';
import { humanDuration, podRow, podTable, formatTable } from '../src/printers/pod-table.js';
import { describePod, kubectlTime } from '../src/printers/describe.js';
import { orderSpans, renderWaterfall } from '../src/printers/waterfall.js';
import { episodesTable, podEpisodes } from '../src/printers/episodes.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const NOW = Date.parse('2026-11-29T12:00:00Z');

/** A finished span record of trace `traceId`, from `startMs` to `endMs`, in pleg unless `extra` says otherwise. */
function aSpan(traceId: string, spanId: string, parentSpanId: string | undefined, name: string, startMs: number, endMs: number, extra: Partial<SpanRecord> = {}): SpanRecord {
  return {
    type: 'kubelet.trace.Span.v1',
    traceId,
    spanId,
    ...(parentSpanId === undefined ? {} : { parentSpanId }),
    name,
    kind: 1,
    service: 'pleg',
    startUnixNano: String(BigInt(startMs) * 1_000_000n),
    endUnixNano: String(BigInt(endMs) * 1_000_000n),
    statusCode: 0,
    attributes: {},
    links: [],
    ...extra,
  };
}

describe('humanDuration (apimachinery duration.HumanDuration)', () => {
  const cases: [number, string][] = [
    [-2 * SECOND, '<invalid>'],
    [-1 * SECOND, '0s'],
    [0, '0s'],
    [SECOND, '1s'],
    [70 * SECOND, '70s'],
    [119 * SECOND, '119s'],
    [120 * SECOND, '2m'],
    [190 * SECOND, '3m10s'],
    [9 * MINUTE + 59 * SECOND, '9m59s'],
    [10 * MINUTE + 30 * SECOND, '10m'],
    [70 * MINUTE, '70m'],
    [179 * MINUTE, '179m'],
    [190 * MINUTE, '3h10m'],
    [5 * HOUR, '5h'],
    [8 * HOUR + 30 * MINUTE, '8h'],
    [47 * HOUR, '47h'],
    [49 * HOUR, '2d1h'],
    [3 * DAY, '3d'],
    [8 * DAY + 2 * HOUR, '8d'],
    [367 * DAY, '367d'],
    [365 * 2 * DAY + 25 * HOUR, '2y1d'],
    [365 * 3 * DAY, '3y'],
    [365 * 8 * DAY + 2 * HOUR, '8y'],
  ];
  for (const [ms, want] of cases) {
    it(`${ms} ms → ${want}`, () => assert.equal(humanDuration(ms), want));
  }
});

function pod(status: Pod['status'], spec: Partial<Pod['spec']> = {}, metadata: Partial<Pod['metadata']> = {}): Pod {
  return aPod({ metadata: { name: 'test1', creationTimestamp: new Date(NOW - 5 * MINUTE).toISOString(), ...metadata }, spec, ...(status === undefined ? {} : { status }) });
}

describe('podRow (kubectl printPod)', () => {
  const two = { containers: [aContainer({ name: 'a' }), aContainer({ name: 'b' })] };

  it('counts ready containers and sums restarts; the phase is the status without a container reason', () => {
    const row = podRow(pod({ phase: 'Running', containerStatuses: [aRunningStatus('a', { ready: true, restartCount: 3 }), aRunningStatus('b', { restartCount: 3 })] }, two), NOW);
    assert.deepEqual([row.name, row.ready, row.status, row.restarts, row.age], ['test1', '1/2', 'Running', '6', '5m']);
  });

  it('a waiting reason wins over the phase, a terminated reason too', () => {
    const waiting = podRow(pod({ phase: 'Running', containerStatuses: [aRunningStatus('a', { ready: true }), aWaitingStatus('b', 'CrashLoopBackOff')] }, two), NOW);
    assert.equal(waiting.status, 'CrashLoopBackOff');
    const terminated = podRow(pod({ phase: 'Failed', containerStatuses: [aTerminatedStatus('a', 1, { state: { terminated: { exitCode: 1, reason: 'Error' } } })] }), NOW);
    assert.equal(terminated.status, 'Error');
  });

  it('a terminated container without reason shows Signal:N or ExitCode:N', () => {
    assert.equal(podRow(pod({ phase: 'Failed', containerStatuses: [aTerminatedStatus('foo1', 2)] }), NOW).status, 'ExitCode:2');
    const signalled = aTerminatedStatus('foo1', 137, { state: { terminated: { exitCode: 137, signal: 9 } } });
    assert.equal(podRow(pod({ phase: 'Failed', containerStatuses: [signalled] }), NOW).status, 'Signal:9');
  });

  it('Completed next to a running container reads Running when Ready, else NotReady', () => {
    const statuses = [aTerminatedStatus('a', 0, { state: { terminated: { exitCode: 0, reason: 'Completed' } } }), aRunningStatus('b', { ready: true })];
    // The loop walks containers from the last to the first, so the first container's reason is the one left.
    const ready = podRow(pod({ phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: statuses }, two), NOW);
    assert.equal(ready.status, 'Running');
    assert.equal(ready.ready, '1/2');
    const notReady = podRow(pod({ phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }], containerStatuses: statuses }, two), NOW);
    assert.equal(notReady.status, 'NotReady');
  });

  it('init containers: Init:i/n while pending, Init:<reason> when one fails or waits with a reason', () => {
    const spec = { initContainers: [aContainer({ name: 'i1' }), aContainer({ name: 'i2' })] };
    const firstDone = [aTerminatedStatus('i1', 0), aRunningStatus('i2')];
    assert.equal(podRow(pod({ phase: 'Pending', initContainerStatuses: firstDone }, spec), NOW).status, 'Init:1/2');
    const crashing = [aTerminatedStatus('i1', 0), aWaitingStatus('i2', 'CrashLoopBackOff', { restartCount: 4 })];
    const row = podRow(pod({ phase: 'Pending', initContainerStatuses: crashing }, spec), NOW);
    assert.equal(row.status, 'Init:CrashLoopBackOff');
    assert.equal(row.restarts, '4');
    const failed = [aTerminatedStatus('i1', 3)];
    assert.equal(podRow(pod({ phase: 'Failed', initContainerStatuses: failed }, spec), NOW).status, 'Init:ExitCode:3');
    const initializing = [aWaitingStatus('i1', 'PodInitializing')];
    assert.equal(podRow(pod({ phase: 'Pending', initContainerStatuses: initializing }, spec), NOW).status, 'Init:0/2');
  });

  it('a started sidecar counts as a container and its restarts stay after initialization', () => {
    const spec = { initContainers: [aContainer({ name: 'side', restartPolicy: 'Always' })], containers: [aContainer({ name: 'main' })] };
    const finished = new Date(NOW - 30 * SECOND).toISOString();
    const side = aRunningStatus('side', { ready: true, started: true, restartCount: 2, lastState: { terminated: { exitCode: 1, finishedAt: finished } } });
    const row = podRow(
      pod(
        { phase: 'Running', conditions: [{ type: 'Initialized', status: 'True' }], initContainerStatuses: [side], containerStatuses: [aRunningStatus('main', { ready: true })] },
        spec,
      ),
      NOW,
    );
    assert.equal(row.ready, '2/2');
    assert.equal(row.status, 'Running');
    assert.equal(row.restarts, '2 (30s ago)');
  });

  it('a pod being deleted reads Terminating unless its phase is terminal', () => {
    const running = pod({ phase: 'Running' }, {}, { deletionTimestamp: new Date(NOW).toISOString() });
    assert.equal(podRow(running, NOW).status, 'Terminating');
    assert.equal(podRow(pod({ phase: 'Running' }), NOW, true).status, 'Terminating');
    assert.equal(podRow(pod({ phase: 'Succeeded' }), NOW, true).status, 'Succeeded');
  });

  it('wide columns: IP, node and readiness gates', () => {
    const row = podRow(
      pod(
        { phase: 'Running', podIP: '10.88.0.4', conditions: [{ type: 'g1', status: 'True' }] },
        { nodeName: 'node-a', readinessGates: [{ conditionType: 'g1' }, { conditionType: 'g2' }] },
      ),
      NOW,
    );
    assert.deepEqual([row.ip, row.node, row.nominatedNode, row.readinessGates], ['10.88.0.4', 'node-a', '<none>', '1/2']);
    assert.equal(podRow(pod(undefined), NOW).ip, '<none>');
  });
});

describe('tables', () => {
  it('pads columns to the widest cell plus three spaces and trims the line end', () => {
    assert.equal(
      formatTable(
        ['A', 'LONGER'],
        [
          ['xyz', '1'],
          ['q', ''],
        ],
      ),
      'A     LONGER\nxyz   1\nq\n',
    );
  });

  it('get pods prints the kubectl headers, wide adds four', () => {
    const row = podRow(pod({ phase: 'Pending' }), NOW);
    assert.match(podTable([row], false), /^NAME {4}READY {3}STATUS {4}RESTARTS {3}AGE\ntest1 {3}0\/1 {5}Pending {3}0 {10}5m\n$/);
    assert.match(podTable([row], true).split('\n')[0]!, /AGE {3}IP {7}NODE {5}NOMINATED NODE {3}READINESS GATES$/);
  });

  it('get pods -A puts a NAMESPACE column first, one namespace per row (kubectl --all-namespaces)', () => {
    const row = podRow(pod({ phase: 'Pending' }), NOW);
    assert.equal(
      podTable([row, row], false, ['kube-system', 'default']),
      'NAMESPACE     NAME    READY   STATUS    RESTARTS   AGE\nkube-system   test1   0/1     Pending   0          5m\ndefault       test1   0/1     Pending   0          5m\n',
    );
    assert.match(podTable([row], true, ['default']).split('\n')[0]!, /^NAMESPACE {3}NAME .*READINESS GATES$/);
    assert.doesNotMatch(podTable([row], false), /NAMESPACE/);
  });
});

describe('describePod', () => {
  const event = (reason: string, message: string, atMs: number, eventType: 'Normal' | 'Warning' = 'Normal'): KubeEvent =>
    ({ reason, message, eventType, timestamp: new Date(atMs).toISOString(), source: { component: 'kubelet', host: 'node-a' } }) as unknown as KubeEvent;

  it('prints kubectl time, container states, conditions and aggregated events', () => {
    const p = pod(
      {
        phase: 'Running',
        podIP: '10.88.0.4',
        podIPs: [{ ip: '10.88.0.4' }],
        startTime: '2026-11-29T11:55:00Z',
        qosClass: 'BestEffort',
        conditions: [{ type: 'Ready', status: 'True' }],
        containerStatuses: [
          aRunningStatus('foo1', {
            ready: true,
            restartCount: 1,
            state: { running: { startedAt: '2026-11-29T11:58:00Z' } },
            lastState: { terminated: { exitCode: 1, reason: 'Error', message: 'bye', startedAt: '2026-11-29T11:56:00Z', finishedAt: '2026-11-29T11:57:00Z' } },
          }),
        ],
      },
      { nodeName: 'node-a', volumes: [{ name: 'scratch', emptyDir: {} }] },
    );
    const events = [
      event('BackOff', 'Back-off restarting failed container foo1', NOW - 40 * SECOND, 'Warning'),
      event('BackOff', 'Back-off restarting failed container foo1', NOW - 10 * SECOND, 'Warning'),
      event('Pulled', 'Container image "busybox" already present on machine', NOW - 4 * MINUTE),
    ];
    const text = describePod(p, events, NOW, false);
    assert.match(text, /^Name: {13}test1$/m);
    assert.match(text, /^Start Time: {7}Sun, 29 Nov 2026 11:55:00 \+0000$/m);
    assert.match(text, /^Status: {11}Running$/m);
    assert.match(text, /^ {4}State: {8}Running\n {6}Started: {4}Sun, 29 Nov 2026 11:58:00 \+0000$/m);
    assert.match(text, /^ {4}Last State: {3}Terminated\n {6}Reason: {5}Error\n {6}Message: {4}bye\n {6}Exit Code: {2}1$/m);
    assert.match(text, /^ {4}Restart Count: 1$/m);
    assert.match(text, /^ {2}scratch:\n {4}Type: {7}EmptyDir/m);
    assert.match(text, /^ {2}Ready {3}True$/m);
    const lines = text.split('\n');
    const evIdx = lines.indexOf('Events:');
    assert.ok(evIdx > 0, text);
    // Oldest last-seen first; the two BackOffs fold into one row with the count.
    assert.match(lines[evIdx + 3]!, /^ {2}Normal {4}Pulled {4}4m {18}kubelet {3}Container image "busybox" already present on machine$/);
    assert.match(lines[evIdx + 4]!, /^ {2}Warning {3}BackOff {3}10s \(x2 over 40s\) {3}kubelet {3}Back-off restarting failed container foo1$/);
  });

  it('Terminating while deleting, <none> events', () => {
    const text = describePod(pod({ phase: 'Running' }), [], NOW, true);
    assert.match(text, /^Status: {11}Terminating$/m);
    assert.match(text, /^Events: {11}<none>$/m);
  });

  it('kubectlTime formats RFC 1123Z in UTC and keeps what does not parse', () => {
    assert.equal(kubectlTime('2026-01-05T03:04:05Z'), 'Mon, 05 Jan 2026 03:04:05 +0000');
    assert.equal(kubectlTime(undefined), '<unknown>');
    assert.equal(kubectlTime('yesterday'), 'yesterday');
  });
});

describe('waterfall', () => {
  const span = (spanId: string, parentSpanId: string | undefined, name: string, startMs: number, endMs: number, extra: Partial<SpanRecord> = {}): SpanRecord =>
    aSpan('a'.repeat(32), spanId, parentSpanId, name, startMs, endMs, { service: 'pod-worker', ...extra });

  it('orders depth-first with children by start time; a span whose parent is missing is a root', () => {
    const spans = [
      span('c2', 'r', 'second', 20, 30),
      span('r', undefined, 'root', 0, 100),
      span('c1', 'r', 'first', 10, 40),
      span('g', 'c1', 'grandchild', 11, 12),
      span('o', 'gone', 'orphan', 50, 60),
    ];
    assert.deepEqual(
      orderSpans(spans).map((r) => `${r.depth}:${r.span.name}`),
      ['0:root', '1:first', '2:grandchild', '1:second', '0:orphan'],
    );
  });

  it('draws bars on a shared axis, marks failures with the status message and counts processes', () => {
    const spans = [
      span('r', undefined, 'syncPod', 0, 1000),
      span('m', 'r', 'runtime.v1.RuntimeService/StartContainer', 500, 1000, { service: 'cri-adapter', statusCode: 2, statusMessage: 'exec: "nope": not found' }),
    ];
    const lines = renderWaterfall(spans, { width: 10 }).trimEnd().split('\n');
    assert.match(lines[0]!, /^SPAN +PROCESS +START +DURATION +0 … 1\.00s$/);
    assert.match(lines[1]!, /^syncPod +pod-worker +0\.0ms +1\.00s +█{10}$/);
    assert.match(lines[2]!, /^ {2}✗ runtime\.v1\.RuntimeService\/StartContainer +cri-adapter +500ms +500ms + {5}✗{5} {2}exec: "nope": not found$/);
    assert.equal(lines[3], `2 spans from 2 processes (cri-adapter, pod-worker), 1 with errors, trace ${'a'.repeat(32)}`);
    assert.equal(renderWaterfall([]), 'no spans\n');
  });
});

describe('episodes', () => {
  const T0 = NOW - 10 * MINUTE;
  const span = aSpan;
  const CREATION = 'c'.repeat(32);
  const RESTART = 'r'.repeat(32);
  const OTHER = 'o'.repeat(32);
  const spans = [
    span(RESTART, 'r1', undefined, 'ContainerDied', T0 + 5 * MINUTE, T0 + 5 * MINUTE + 300, { attributes: { 'k8s.pod.uid': 'u1' }, links: [{ traceId: CREATION, spanId: 'c1' }] }),
    span(RESTART, 'r2', 'r1', 'syncPod', T0 + 5 * MINUTE + 10, T0 + 5 * MINUTE + 1500, { service: 'pod-worker', statusCode: 2, attributes: { 'k8s.pod.uid': 'u1' } }),
    span(CREATION, 'c2', 'c1', 'syncPod', T0 + 20, T0 + 400, { service: 'pod-worker', attributes: { 'k8s.pod.uid': 'u1' } }),
    span(CREATION, 'c1', undefined, 'config.add', T0, T0 + 30, { service: 'config-source', attributes: { 'k8s.pod.uid': 'u1' } }),
    // A trace that never names the pod: another pod's, or periodic work.
    span(OTHER, 'o1', undefined, 'config.add', T0 + MINUTE, T0 + MINUTE + 5, { attributes: { 'k8s.pod.uid': 'u2' } }),
  ];

  it('groups the spans that touched the pod by trace, roots first by start, with counts and the creation link', () => {
    const eps = podEpisodes(spans, 'u1', CREATION);
    assert.deepEqual(
      eps.map((e) => [e.traceId, e.root.name, e.spans, e.processes, e.errors, e.durationMs, e.linkedToCreation]),
      [
        [CREATION, 'config.add', 2, 2, 0, 400, false],
        [RESTART, 'ContainerDied', 2, 2, 1, 1500, true],
      ],
    );
    assert.deepEqual(podEpisodes(spans, 'nobody', CREATION), []);
  });

  it('prints one row per episode, marking the creation and the traces linked to it', () => {
    const lines = episodesTable(podEpisodes(spans, 'u1', CREATION), CREATION, NOW)
      .trimEnd()
      .split('\n');
    assert.match(lines[0]!, /^TRACE ID {27}EPISODE {17}PROCESS {9}AGE {3}DURATION {3}SPANS {3}ERRORS {3}LINKED$/);
    assert.match(lines[1]!, new RegExp(`^${CREATION} {3}config\\.add \\(creation\\) {3}config-source {3}10m {3}400ms {6}2 {7}0 {8}-$`));
    assert.match(lines[2]!, new RegExp(`^${RESTART} {3}ContainerDied {11}pleg {12}5m {4}1\\.50s {6}2 {7}1 {8}creation$`));
    assert.equal(episodesTable([], CREATION, NOW), 'No traces of this pod on the bus (spans are kept for an hour).\n');
  });
});
