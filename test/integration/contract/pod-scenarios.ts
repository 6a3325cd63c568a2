/**
 * The pod contract: ONE table of pod scenarios, each a manifest and what the kubelet would show for
 * it — phase, pod reason, container states and reasons, restart counts, events — plus the extra
 * checks some scenarios need (logs, the runtime's own listing, deletion timing, crash-loop delays).
 *
 * `pod-contract.test.ts` runs the whole table against `splitlet up --runtime sim` and against
 * `--runtime containerd` and expects the same outcome from both. Where they differ, the simulator
 * is fixed (libs/cri/src/testing), never the table.
 *
 * Covers issue 3's "done when" items 1–5 and the bad-input list; each scenario names what it covers.
 * Event texts are the kubelet's (KUBELET.md §5.2, §6.3, §7).
 */

/** The pod a scenario produced, for texts that name it. */
export interface PodRef {
  /** `<name>-<node>`. */
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  /** The manifest file it was written to. */
  readonly file: string;
  /** Its `status.podIP` (the last one reported; '' when it never had one). */
  readonly podIP: string;
}

/** An exact text, a pattern, or one computed from the pod. */
export type Text = string | RegExp | ((pod: PodRef) => string | RegExp);

/** A restart count: exact, or at least `min` (crash loops keep counting). */
export type Count = number | { readonly min: number };

/** One container's expected status. Omitted fields are not checked. */
export interface ExpectedContainer {
  readonly name: string;
  readonly state: 'running' | 'waiting' | 'terminated';
  /** The waiting or terminated reason; a list accepts any of them (a crash loop alternates). */
  readonly reason?: string | readonly string[];
  /** The waiting or terminated message; `null`: none. */
  readonly message?: Text | null;
  readonly exitCode?: number;
  readonly restartCount?: Count;
  /** The previous instance (`lastState.terminated`). */
  readonly last?: { readonly reason: string; readonly exitCode: number; readonly message?: Text | null };
}

/** An event the kubelet records; `count` bounds how often (default: at least once). */
export interface ExpectedEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: Text;
}

/** Extra checks beyond the status snapshot, implemented once per kind by the test. */
export type ScenarioCheck =
  /** `splitlet logs POD -c CONTAINER [--previous]` prints exactly these lines (each a text or pattern). */
  | { readonly kind: 'logs'; readonly container: string; readonly previous?: boolean; readonly lines: readonly Text[] }
  /**
   * The runtime itself (CRI ListPodSandbox / ListContainers by pod UID; on containerd also `ctr`)
   * lists exactly one sandbox, ready, and these containers in these states; with no containers
   * listed, no sandbox either.
   */
  | { readonly kind: 'runtime'; readonly containers: Readonly<Record<string, 'running' | 'exited'>> }
  /**
   * Deleting the manifest stops the container [minS, maxS] seconds after the kubelet starts killing
   * it (its `Killing` event, recorded just before CRI StopContainer), with this exit code (0: it
   * trapped SIGTERM and exited; 137: SIGKILLed at the grace period); then the pod is gone. The time
   * from the delete to the `Killing` event (the pipeline) is reported and bounded at 10 s.
   */
  | { readonly kind: 'delete'; readonly minS: number; readonly maxS: number; readonly exitCode: number; readonly events: readonly ExpectedEvent[] }
  /**
   * A crash loop: the delays before restarts 2, 3, 4 (the first restart is immediate) follow
   * `delaysS`, each within [want − early, want + late] seconds.
   */
  | { readonly kind: 'crashLoop'; readonly container: string; readonly delaysS: readonly number[]; readonly early: number; readonly late: number };

/** One scenario. */
export interface PodScenario {
  /** The pod's name in the manifest (the file is `<id>.json`). */
  readonly id: string;
  /** What it covers in issue 3 ("done when 2", "bad input: …"). */
  readonly covers: string;
  /** The manifest as written to the manifest directory. */
  readonly manifest: Readonly<Record<string, unknown>>;
  /** Waits this long at most for the expectation (default 90 s: a loaded 2-core machine is slow). */
  readonly timeoutS?: number;
  /** The manifest is refused before any pod exists (static-pod validation): no pod, a Node event. */
  readonly refused?: { readonly nodeEvent: ExpectedEvent };
  readonly expect?: {
    readonly phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
    readonly reason?: string;
    readonly message?: Text;
    readonly initContainers?: readonly ExpectedContainer[];
    readonly containers: readonly ExpectedContainer[];
    /** Events of the pod that must all be there (in any order). */
    readonly events: readonly ExpectedEvent[];
    /** Event reasons that must not appear for this pod. */
    readonly noEvents?: readonly string[];
    /** `status.qosClass`. */
    readonly qosClass?: 'Guaranteed' | 'Burstable' | 'BestEffort';
  };
  /** Runs after `expect` holds, in order. */
  readonly checks?: readonly ScenarioCheck[];
  /** The outcome depends on timing (restart counts, backoff events): compared by the checks only. */
  readonly volatile?: boolean;
  /**
   * Its checks measure the kubelet's timings (backoffs, grace periods): the pod is written once every
   * other scenario has settled, so that ~45 pods starting at once on a 2-core machine do not stretch them.
   */
  readonly timed?: boolean;
}

export const IMAGE = 'busybox:1.36';

export function pod(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { terminationGracePeriodSeconds: 2, ...spec } };
}

export function container(name: string, command: readonly string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, image: IMAGE, command, ...extra };
}

const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The events every started container gets, in the kubelet's words. */
export function started(...names: string[]): ExpectedEvent[] {
  return [
    { type: 'Normal', reason: 'Pulled', message: `Container image "${IMAGE}" already present on machine` },
    ...names.flatMap((n): ExpectedEvent[] => [
      { type: 'Normal', reason: 'Created', message: `Created container: ${n}` },
      { type: 'Normal', reason: 'Started', message: `Started container ${n}` },
    ]),
  ];
}

/** `<name>_<namespace>(<uid>)`, as the kubelet formats a pod in messages (format.Pod). */
const podDesc = (p: PodRef): string => `${p.name}_${p.namespace}(${p.uid})`;

const shared = [{ name: 'shared', mountPath: '/data' }];

/** The runc error containerd reports when the command does not exist (measured, containerd 1.6.20 + runc 1.1.5). */
const runcNoSuchFile = (path: string): string =>
  `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "${path}": stat ${path}: no such file or directory: unknown`;

/** containerd's PullImage error on a node without registry access (measured, containerd 1.6.20). */
const noRegistry = (path: string, tag: string): string =>
  `rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/${path}:${tag}": failed to resolve reference "docker.io/${path}:${tag}": failed to do request: Head "https://registry-1.docker.io/v2/${path}/manifests/${tag}": proxyconnect tcp: dial tcp 127.0.0.1:1: connect: connection refused`;

/** The whole table. */
export const POD_SCENARIOS: readonly PodScenario[] = [
  // ---------------------------------------------------------------- done when 1
  {
    id: 'init-order',
    covers: 'done when 1: two init containers in order and two containers sharing an emptyDir; logs; one sandbox',
    manifest: pod('init-order', {
      volumes: [{ name: 'shared', emptyDir: {} }],
      initContainers: [
        container('init1', ['sh', '-c', 'echo init1 >> /data/order; echo from init1'], { volumeMounts: shared }),
        container('init2', ['sh', '-c', 'echo init2 >> /data/order; echo from init2'], { volumeMounts: shared }),
      ],
      containers: [
        container('app', ['sh', '-c', 'cat /data/order; echo from app; sleep 3600'], { volumeMounts: shared }),
        container('sidecar', ['sh', '-c', 'cat /data/order; echo from sidecar; sleep 3600'], { volumeMounts: shared }),
      ],
    }),
    expect: {
      phase: 'Running',
      initContainers: [
        { name: 'init1', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 },
        { name: 'init2', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 },
      ],
      containers: [
        { name: 'app', state: 'running', restartCount: 0 },
        { name: 'sidecar', state: 'running', restartCount: 0 },
      ],
      events: started('init1', 'init2', 'app', 'sidecar'),
      noEvents: ['Failed', 'BackOff', 'SandboxChanged', 'Killing'],
    },
    checks: [
      { kind: 'logs', container: 'init1', lines: ['from init1'] },
      { kind: 'logs', container: 'init2', lines: ['from init2'] },
      // The shared file proves the order: init1 wrote first, init2 second, both before the app ran.
      { kind: 'logs', container: 'app', lines: ['init1', 'init2', 'from app'] },
      { kind: 'logs', container: 'sidecar', lines: ['init1', 'init2', 'from sidecar'] },
      { kind: 'runtime', containers: { init1: 'exited', init2: 'exited', app: 'running', sidecar: 'running' } },
    ],
  },
  {
    id: 'bystander',
    covers: 'other pods on the node are unaffected (checked again at the end)',
    manifest: pod('bystander', { containers: [container('main', ['sleep', '3600'])] }),
    expect: { phase: 'Running', containers: [{ name: 'main', state: 'running', restartCount: 0 }], events: started('main'), noEvents: ['Failed', 'BackOff', 'Killing'] },
  },

  // ---------------------------------------------------------------- done when 2
  {
    id: 'never-exit0',
    covers: 'done when 2: restartPolicy Never + exit 0 → Succeeded',
    manifest: pod('never-exit0', { restartPolicy: 'Never', containers: [container('main', ['sh', '-c', 'echo done; exit 0'])] }),
    expect: {
      phase: 'Succeeded',
      containers: [{ name: 'main', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 }],
      events: started('main'),
      noEvents: ['BackOff', 'Failed'],
    },
    checks: [{ kind: 'logs', container: 'main', lines: ['done'] }],
  },
  {
    id: 'never-exit1',
    covers: 'done when 2: restartPolicy Never + exit 1 → Failed, reason Error',
    manifest: pod('never-exit1', { restartPolicy: 'Never', containers: [container('main', ['sh', '-c', 'echo failing; exit 1'])] }),
    expect: {
      phase: 'Failed',
      containers: [{ name: 'main', state: 'terminated', reason: 'Error', exitCode: 1, restartCount: 0 }],
      events: started('main'),
      noEvents: ['BackOff'],
    },
  },
  {
    id: 'image-cmd',
    covers: 'done when 2: no command runs the image CMD (busybox: sh, which exits 0 at once without stdin) → Succeeded',
    manifest: pod('image-cmd', { restartPolicy: 'Never', containers: [{ name: 'main', image: IMAGE }] }),
    expect: {
      phase: 'Succeeded',
      containers: [{ name: 'main', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 }],
      events: started('main'),
    },
  },
  {
    id: 'onfailure-exit0',
    covers: 'done when 2: OnFailure does not restart a success',
    manifest: pod('onfailure-exit0', { restartPolicy: 'OnFailure', containers: [container('main', ['sh', '-c', 'exit 0'])] }),
    expect: {
      phase: 'Succeeded',
      containers: [{ name: 'main', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 }],
      events: started('main'),
      noEvents: ['BackOff'],
    },
  },
  {
    id: 'onfailure-once',
    covers: 'done when 2: OnFailure restarts a failure (once: the second run succeeds)',
    manifest: pod('onfailure-once', {
      restartPolicy: 'OnFailure',
      volumes: [{ name: 'shared', emptyDir: {} }],
      containers: [container('main', ['sh', '-c', 'if [ -f /data/ran ]; then echo second; exit 0; fi; touch /data/ran; echo first; exit 1'], { volumeMounts: shared })],
    }),
    expect: {
      phase: 'Succeeded',
      containers: [{ name: 'main', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 1, last: { reason: 'Error', exitCode: 1 } }],
      events: started('main'),
    },
    checks: [
      { kind: 'logs', container: 'main', lines: ['second'] },
      { kind: 'logs', container: 'main', previous: true, lines: ['first'] },
    ],
  },
  {
    id: 'crashloop',
    timed: true,
    covers: 'done when 2: Always restarts with CrashLoopBackOff, delays 10 s, 20 s, 40 s',
    manifest: pod('crashloop', { restartPolicy: 'Always', containers: [container('main', ['sh', '-c', 'echo crashing; sleep 1; exit 1'])] }),
    volatile: true,
    expect: {
      phase: 'Running',
      containers: [{ name: 'main', state: 'waiting', reason: 'CrashLoopBackOff', restartCount: { min: 1 }, last: { reason: 'Error', exitCode: 1 } }],
      events: [...started('main'), { type: 'Warning', reason: 'BackOff', message: (p) => `Back-off restarting failed container main in pod ${podDesc(p)}` }],
    },
    checks: [
      { kind: 'logs', container: 'main', previous: true, lines: ['crashing'] },
      // Tolerance: a restart may come at most 1 s early (the status timestamps have 1 s resolution)
      // and 3 s late (PLEG's 1 s relist + the requeue at the backoff expiry + the start itself).
      { kind: 'crashLoop', container: 'main', delaysS: [10, 20, 40], early: 1, late: 3 },
    ],
  },

  // ---------------------------------------------------------------- kubelet-managed files
  {
    id: 'term-msg-file',
    covers: 'termination message: what the container wrote to /dev/termination-log is the terminated message',
    manifest: pod('term-msg-file', { restartPolicy: 'Never', containers: [container('main', ['sh', '-c', 'echo "bye from c" > /dev/termination-log; exit 3'])] }),
    expect: {
      phase: 'Failed',
      containers: [{ name: 'main', state: 'terminated', reason: 'Error', exitCode: 3, message: 'bye from c\n', restartCount: 0 }],
      events: started('main'),
      noEvents: ['BackOff'],
    },
  },
  {
    id: 'term-msg-fallback',
    covers: 'termination message: FallbackToLogsOnError + a failure and no file content → the log tail (a last line without newline stays without)',
    manifest: pod('term-msg-fallback', {
      restartPolicy: 'Never',
      containers: [container('main', ['sh', '-c', "echo line one; echo line two; printf 'no newline'; exit 1"], { terminationMessagePolicy: 'FallbackToLogsOnError' })],
    }),
    expect: {
      phase: 'Failed',
      containers: [{ name: 'main', state: 'terminated', reason: 'Error', exitCode: 1, message: 'line one\nline two\nno newline', restartCount: 0 }],
      events: started('main'),
    },
  },
  {
    id: 'term-msg-policy-file',
    covers: 'termination message: policy File never falls back to the logs',
    manifest: pod('term-msg-policy-file', {
      restartPolicy: 'Never',
      containers: [container('main', ['sh', '-c', "echo line one; echo line two; printf 'no newline'; exit 1"], { terminationMessagePolicy: 'File' })],
    }),
    expect: {
      phase: 'Failed',
      containers: [{ name: 'main', state: 'terminated', reason: 'Error', exitCode: 1, message: null, restartCount: 0 }],
      events: started('main'),
    },
    checks: [{ kind: 'logs', container: 'main', lines: ['line one', 'line two', 'no newline'] }],
  },
  {
    id: 'term-msg-restart',
    covers: "termination message: each instance gets a fresh file; the first run's message stays in lastState",
    manifest: pod('term-msg-restart', {
      restartPolicy: 'OnFailure',
      volumes: [{ name: 'shared', emptyDir: {} }],
      containers: [
        container('main', ['sh', '-c', 'if [ -f /data/ran ]; then exit 0; fi; touch /data/ran; echo "first run failed" > /dev/termination-log; exit 1'], { volumeMounts: shared }),
      ],
    }),
    expect: {
      phase: 'Succeeded',
      containers: [
        {
          name: 'main',
          state: 'terminated',
          reason: 'Completed',
          exitCode: 0,
          message: null,
          restartCount: 1,
          last: { reason: 'Error', exitCode: 1, message: 'first run failed\n' },
        },
      ],
      events: started('main'),
    },
  },
  {
    id: 'etc-hosts',
    covers: 'the kubelet-managed /etc/hosts: the pod IP with hostname.subdomain (splitlet up sets no cluster domain), and the host aliases',
    manifest: pod('etc-hosts', {
      restartPolicy: 'Never',
      hostname: 'hn',
      subdomain: 'sub',
      hostAliases: [
        { ip: '10.1.2.3', hostnames: ['foo.local', 'bar.local'] },
        { ip: '10.1.2.4', hostnames: ['baz'] },
      ],
      containers: [container('main', ['cat', '/etc/hosts'])],
    }),
    expect: {
      phase: 'Succeeded',
      containers: [{ name: 'main', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 }],
      events: started('main'),
    },
    checks: [
      {
        kind: 'logs',
        container: 'main',
        lines: [
          '# Kubernetes-managed hosts file.',
          '127.0.0.1\tlocalhost',
          '::1\tlocalhost ip6-localhost ip6-loopback',
          'fe00::0\tip6-localnet',
          'fe00::0\tip6-mcastprefix',
          'fe00::1\tip6-allnodes',
          'fe00::2\tip6-allrouters',
          (p) => `${p.podIP}\thn.sub.default.svc.\thn`,
          '',
          '# Entries added by HostAliases.',
          '10.1.2.3\tfoo.local\tbar.local',
          '10.1.2.4\tbaz',
        ],
      },
    ],
  },

  {
    id: 'downward-api-volume',
    covers: 'issue 10: a downwardAPI volume projected from the pod itself (labels, annotations, a resource with its divisor), read by the container',
    manifest: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'downward-api-volume', labels: { zone: 'us-est-coast', cluster: 'test-cluster1', rack: 'rack-22' }, annotations: { build: 'two', builder: 'john-doe' } },
      spec: {
        terminationGracePeriodSeconds: 2,
        restartPolicy: 'Never',
        containers: [
          container('client-container', ['sh', '-c', 'cat /etc/podinfo/labels; echo; cat /etc/podinfo/annotations; echo; cat /etc/podinfo/cpu_limit; echo'], {
            resources: { limits: { cpu: '250m', memory: '64Mi' } },
            volumeMounts: [{ name: 'podinfo', mountPath: '/etc/podinfo' }],
          }),
        ],
        volumes: [
          {
            name: 'podinfo',
            downwardAPI: {
              items: [
                { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
                { path: 'cpu_limit', resourceFieldRef: { containerName: 'client-container', resource: 'limits.cpu', divisor: '1m' } },
              ],
            },
          },
        ],
      },
    },
    expect: {
      phase: 'Succeeded',
      containers: [{ name: 'client-container', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 }],
      events: started('client-container'),
      noEvents: ['FailedMount'],
    },
    checks: [
      {
        kind: 'logs',
        container: 'client-container',
        // A static pod carries the kubelet's config annotations too (sorted after "builder").
        lines: [
          'cluster="test-cluster1"',
          'rack="rack-22"',
          'zone="us-est-coast"',
          'build="two"',
          'builder="john-doe"',
          (p) => `kubernetes.io/config.hash="${p.uid}"`,
          /^kubernetes\.io\/config\.seen="\d{4}-\d\d-\d\dT[\d:.]+Z"$/,
          'kubernetes.io/config.source="file"',
          '250',
        ],
      },
    ],
  },

  // ---------------------------------------------------------------- done when 3
  {
    id: 'term-trap',
    timed: true,
    covers: 'done when 3: a container that traps SIGTERM and exits takes about the time it needs (grace 30 s)',
    manifest: pod('term-trap', { terminationGracePeriodSeconds: 30, containers: [container('main', ['sh', '-c', "trap 'echo bye; exit 0' TERM; echo ready; sleep 3600 & wait"])] }),
    expect: { phase: 'Running', containers: [{ name: 'main', state: 'running' }], events: started('main') },
    checks: [
      { kind: 'logs', container: 'main', lines: ['ready'] },
      { kind: 'delete', minS: 0, maxS: 1.5, exitCode: 0, events: [{ type: 'Normal', reason: 'Killing', message: 'Stopping container main' }] },
    ],
  },
  {
    id: 'term-ignore',
    timed: true,
    covers: 'done when 3: a container that ignores SIGTERM (sleep as PID 1) is killed at the grace period (4 s)',
    manifest: pod('term-ignore', { terminationGracePeriodSeconds: 4, containers: [container('main', ['sleep', '3600'])] }),
    expect: { phase: 'Running', containers: [{ name: 'main', state: 'running' }], events: started('main') },
    checks: [{ kind: 'delete', minS: 3.8, maxS: 5.5, exitCode: 137, events: [{ type: 'Normal', reason: 'Killing', message: 'Stopping container main' }] }],
  },

  // ---------------------------------------------------------------- done when 4
  {
    id: 'pull-missing',
    covers: 'done when 4: an absent image with IfNotPresent → ErrImagePull → ImagePullBackOff',
    manifest: pod('pull-missing', { containers: [container('main', ['true'], { image: 'nosuch:1.0', imagePullPolicy: 'IfNotPresent' })] }),
    expect: {
      phase: 'Pending',
      containers: [{ name: 'main', state: 'waiting', reason: 'ImagePullBackOff', message: 'Back-off pulling image "nosuch:1.0"', restartCount: 0 }],
      events: [
        { type: 'Normal', reason: 'Pulling', message: 'Pulling image "nosuch:1.0"' },
        // The node has no registry (containerd's proxy is a closed loopback port; the simulator says the same).
        { type: 'Warning', reason: 'Failed', message: `Failed to pull image "nosuch:1.0": ${noRegistry('library/nosuch', '1.0')}` },
        { type: 'Warning', reason: 'Failed', message: 'Error: ErrImagePull' },
        { type: 'Normal', reason: 'BackOff', message: 'Back-off pulling image "nosuch:1.0"' },
        { type: 'Warning', reason: 'Failed', message: 'Error: ImagePullBackOff' },
      ],
      noEvents: ['Created', 'Started'],
    },
  },

  {
    id: 'pull-always-present',
    covers: 'done when 4: policy Always pulls even a present image; the node has no registry → ErrImagePull',
    manifest: pod('pull-always-present', { containers: [container('main', ['sleep', '3600'], { imagePullPolicy: 'Always' })] }),
    expect: {
      phase: 'Pending',
      containers: [{ name: 'main', state: 'waiting', reason: 'ImagePullBackOff', message: `Back-off pulling image "${IMAGE}"`, restartCount: 0 }],
      events: [
        { type: 'Normal', reason: 'Pulling', message: `Pulling image "${IMAGE}"` },
        { type: 'Warning', reason: 'Failed', message: `Failed to pull image "${IMAGE}": ${noRegistry('library/busybox', '1.36')}` },
        { type: 'Warning', reason: 'Failed', message: 'Error: ErrImagePull' },
        { type: 'Normal', reason: 'BackOff', message: `Back-off pulling image "${IMAGE}"` },
        { type: 'Warning', reason: 'Failed', message: 'Error: ImagePullBackOff' },
      ],
      noEvents: ['Pulled', 'Created', 'Started'],
    },
  },

  // ---------------------------------------------------------------- done when 5
  {
    id: 'privileged',
    covers: 'done when 5: a privileged pod on a node that does not allow it is refused (canRunPod)',
    manifest: pod('privileged', { containers: [container('main', ['sleep', '3600'], { securityContext: { privileged: true } })] }),
    expect: {
      phase: 'Pending',
      reason: 'Forbidden',
      message: (p) => `pod with UID "${p.uid}" specified privileged container, but is disallowed`,
      containers: [{ name: 'main', state: 'waiting', reason: 'Blocked', restartCount: 0 }],
      // The kubelet records no event for a pod canRunPod refuses; the status carries the reason.
      events: [],
      noEvents: ['Pulled', 'Created', 'Started'],
    },
    checks: [{ kind: 'runtime', containers: {} }],
  },

  // ---------------------------------------------------------------- bad input
  {
    id: 'never-pull',
    covers: 'bad input: an image that does not exist with policy Never → ErrImageNeverPull',
    manifest: pod('never-pull', { containers: [container('main', ['true'], { image: 'nosuch:1.0', imagePullPolicy: 'Never' })] }),
    expect: {
      phase: 'Pending',
      containers: [
        { name: 'main', state: 'waiting', reason: 'ErrImageNeverPull', message: 'Container image "nosuch:1.0" is not present with pull policy of Never', restartCount: 0 },
      ],
      events: [
        { type: 'Warning', reason: 'ErrImageNeverPull', message: 'Container image "nosuch:1.0" is not present with pull policy of Never' },
        { type: 'Warning', reason: 'Failed', message: 'Error: ErrImageNeverPull' },
      ],
      noEvents: ['Pulling', 'Created'],
    },
  },
  {
    id: 'bad-image-name',
    covers: 'bad input: an image name that does not parse → InvalidImageName',
    manifest: pod('bad-image-name', { containers: [container('main', ['true'], { image: 'Busybox:UPPER' })] }),
    expect: {
      phase: 'Pending',
      containers: [
        {
          name: 'main',
          state: 'waiting',
          reason: 'InvalidImageName',
          message:
            'Failed to apply default image tag "Busybox:UPPER": couldn\'t parse image name "Busybox:UPPER": invalid reference format: repository name (library/Busybox) must be lowercase',
          restartCount: 0,
        },
      ],
      events: [
        {
          type: 'Warning',
          reason: 'InspectFailed',
          message:
            'Failed to apply default image tag "Busybox:UPPER": couldn\'t parse image name "Busybox:UPPER": invalid reference format: repository name (library/Busybox) must be lowercase',
        },
        { type: 'Warning', reason: 'Failed', message: 'Error: InvalidImageName' },
      ],
      noEvents: ['Pulling', 'Created'],
    },
  },
  {
    id: 'no-such-binary',
    covers: 'bad input: a command that does not exist in the image (Never: StartError, Failed)',
    manifest: pod('no-such-binary', { restartPolicy: 'Never', containers: [container('main', ['/no/such/binary'])] }),
    expect: {
      phase: 'Failed',
      containers: [{ name: 'main', state: 'terminated', reason: 'StartError', exitCode: 128, message: runcNoSuchFile('/no/such/binary'), restartCount: 0 }],
      events: [
        { type: 'Normal', reason: 'Created', message: 'Created container: main' },
        { type: 'Warning', reason: 'Failed', message: `Error: ${runcNoSuchFile('/no/such/binary')}` },
      ],
      noEvents: ['Started'],
    },
  },
  {
    id: 'no-such-command',
    covers: 'bad input: a command not on $PATH, restartPolicy Always → RunContainerError / CrashLoopBackOff',
    manifest: pod('no-such-command', { containers: [container('main', ['nosuchcmd'])] }),
    volatile: true,
    expect: {
      phase: 'Running',
      containers: [
        {
          name: 'main',
          state: 'waiting',
          reason: ['RunContainerError', 'CrashLoopBackOff'],
          restartCount: { min: 1 },
          last: {
            reason: 'StartError',
            exitCode: 128,
            message:
              'failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "nosuchcmd": executable file not found in $PATH: unknown',
          },
        },
      ],
      events: [
        { type: 'Normal', reason: 'Created', message: 'Created container: main' },
        {
          type: 'Warning',
          reason: 'Failed',
          message: new RegExp(
            `^Error: ${esc('failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "nosuchcmd": executable file not found in $PATH: unknown')}$`,
          ),
        },
        { type: 'Warning', reason: 'BackOff', message: (p) => `Back-off restarting failed container main in pod ${podDesc(p)}` },
      ],
      noEvents: ['Started'],
    },
  },
  {
    id: 'nonroot-root-image',
    covers: 'bad input: runAsNonRoot with an image that runs as root → CreateContainerConfigError',
    manifest: pod('nonroot-root-image', { containers: [container('main', ['sleep', '3600'], { securityContext: { runAsNonRoot: true } })] }),
    expect: {
      phase: 'Pending',
      containers: [
        {
          name: 'main',
          state: 'waiting',
          reason: 'CreateContainerConfigError',
          message: (p) => `container has runAsNonRoot and image will run as root (pod: "${podDesc(p)}", container: main)`,
          restartCount: 0,
        },
      ],
      events: [{ type: 'Warning', reason: 'Failed', message: (p) => `Error: container has runAsNonRoot and image will run as root (pod: "${podDesc(p)}", container: main)` }],
      noEvents: ['Created', 'Started'],
    },
  },
  {
    id: 'undefined-volume',
    covers: 'bad input: a volume mount of an undefined volume — static-pod validation refuses the manifest, as the kubelet does',
    manifest: pod('undefined-volume', { containers: [container('main', ['sleep', '3600'], { volumeMounts: [{ name: 'nosuch', mountPath: '/x' }] })] }),
    refused: {
      nodeEvent: {
        type: 'Warning',
        reason: 'FailedValidation',
        message: (p) => `Could not process manifest file ${JSON.stringify(p.file)}: invalid pod: [spec.containers[0].volumeMounts[0].name: Not found: "nosuch"]`,
      },
    },
  },
  {
    id: 'negative-grace',
    timed: true,
    covers: 'bad input: a negative grace period runs as 1 s (decoding since 1.27); deleting kills at the 2 s minimum',
    manifest: pod('negative-grace', { terminationGracePeriodSeconds: -5, containers: [container('main', ['sleep', '3600'])] }),
    expect: { phase: 'Running', containers: [{ name: 'main', state: 'running', restartCount: 0 }], events: started('main') },
    checks: [{ kind: 'delete', minS: 1.8, maxS: 3.5, exitCode: 137, events: [{ type: 'Normal', reason: 'Killing', message: 'Stopping container main' }] }],
  },
];
