/**
 * The probe contract's pods: each a manifest the kubelet's prober would treat the same on any
 * runtime, named by what it covers. `probe-contract.test.ts` runs them on sim and containerd and
 * checks each with the kubelet's texts. `runtimes` limits a scenario to the runtimes that can serve
 * it (HTTP and TCP probes need a real pod IP: containerd's CNI bridge).
 */

const IMAGE = 'busybox:1.36';

export type ProbeScenarioId = 'readiness-flap' | 'liveness-restart' | 'startup-gate' | 'startup-fail' | 'exec-timeout' | 'sidecar-startup' | 'http-tcp' | 'steady';

export interface ProbeScenario {
  readonly id: ProbeScenarioId;
  readonly covers: string;
  readonly runtimes: readonly ('sim' | 'containerd')[];
  readonly manifest: Readonly<Record<string, unknown>>;
}

function pod(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { terminationGracePeriodSeconds: 2, ...spec } };
}

const both = ['sim', 'containerd'] as const;

export const PROBE_SCENARIOS: readonly ProbeScenario[] = [
  {
    id: 'readiness-flap',
    covers: 'readiness flapping with the thresholds (Ready false → true → false → true), splitlet exec',
    runtimes: both,
    manifest: pod('readiness-flap', {
      containers: [
        {
          name: 'app',
          image: IMAGE,
          command: ['sh', '-c', 'touch /tmp/ready; sleep 3600'],
          readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1, successThreshold: 2, failureThreshold: 2 },
        },
      ],
    }),
  },
  {
    id: 'liveness-restart',
    covers: "liveness failure → Killing and a restart with restartCount and lastState; the probe's terminationGracePeriodSeconds",
    runtimes: both,
    manifest: pod('liveness-restart', {
      terminationGracePeriodSeconds: 30,
      containers: [
        {
          name: 'app',
          image: IMAGE,
          command: ['sh', '-c', "trap '' TERM; while true; do sleep 1; done"],
          livenessProbe: { exec: { command: ['cat', '/tmp/alive'] }, periodSeconds: 1, failureThreshold: 2, terminationGracePeriodSeconds: 3 },
        },
      ],
    }),
  },
  {
    id: 'startup-gate',
    covers: 'a startup probe holds the liveness probe back until it succeeds',
    runtimes: both,
    manifest: pod('startup-gate', {
      containers: [
        {
          name: 'app',
          image: IMAGE,
          command: ['sh', '-c', 'sleep 6; touch /tmp/started; sleep 3600'],
          startupProbe: { exec: { command: ['cat', '/tmp/started'] }, periodSeconds: 1, failureThreshold: 60 },
          livenessProbe: { exec: { command: ['cat', '/tmp/alive'] }, periodSeconds: 1, failureThreshold: 1 },
        },
      ],
    }),
  },
  {
    id: 'startup-fail',
    covers: 'a startup probe past its failureThreshold kills and restarts the container',
    runtimes: both,
    manifest: pod('startup-fail', {
      containers: [
        { name: 'app', image: IMAGE, command: ['sleep', '3600'], startupProbe: { exec: { command: ['cat', '/tmp/never'] }, periodSeconds: 1, failureThreshold: 2 } },
      ],
    }),
  },
  {
    id: 'exec-timeout',
    covers: 'an exec probe that outlives timeoutSeconds fails with the kubelet text',
    runtimes: both,
    manifest: pod('exec-timeout', {
      containers: [{ name: 'app', image: IMAGE, command: ['sleep', '3600'], readinessProbe: { exec: { command: ['sleep', '5'] }, timeoutSeconds: 1, periodSeconds: 2 } }],
    }),
  },
  {
    id: 'sidecar-startup',
    covers: 'a sidecar init container with a startup probe counts as started once it succeeds (not Init:0/1)',
    runtimes: both,
    manifest: pod('sidecar-startup', {
      initContainers: [
        {
          name: 'side',
          image: IMAGE,
          restartPolicy: 'Always',
          command: ['sh', '-c', 'sleep 2; touch /tmp/up; sleep 3600'],
          startupProbe: { exec: { command: ['cat', '/tmp/up'] }, periodSeconds: 1, failureThreshold: 30 },
        },
      ],
      containers: [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }],
    }),
  },
  {
    id: 'http-tcp',
    covers: 'httpGet against busybox httpd on the pod IP (named port), a 404, tcpSocket open and refused',
    runtimes: ['containerd'],
    manifest: pod('http-tcp', {
      containers: [
        {
          name: 'web',
          image: IMAGE,
          command: ['sh', '-c', 'mkdir -p /www && echo ok > /www/healthz && exec httpd -f -p 8080 -h /www'],
          ports: [{ name: 'http', containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 },
          livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1, failureThreshold: 1 },
        },
        { name: 'notfound', image: IMAGE, command: ['sleep', '3600'], readinessProbe: { httpGet: { path: '/missing', port: 8080 }, periodSeconds: 1 } },
        { name: 'closed', image: IMAGE, command: ['sleep', '3600'], readinessProbe: { tcpSocket: { port: 9999 }, periodSeconds: 1 } },
      ],
    }),
  },
  {
    id: 'steady',
    covers: 'passing probes survive a prober killed with -9: no restart, Ready stays True',
    runtimes: both,
    manifest: pod('steady', {
      containers: [
        {
          name: 'app',
          image: IMAGE,
          command: ['sleep', '3600'],
          // Generous timeouts and thresholds: on a loaded 2-core machine an exec can take over 1 s.
          livenessProbe: { exec: { command: ['true'] }, periodSeconds: 1, failureThreshold: 5, timeoutSeconds: 10 },
          readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1, failureThreshold: 5, timeoutSeconds: 10 },
          startupProbe: { exec: { command: ['true'] }, periodSeconds: 1, failureThreshold: 5, timeoutSeconds: 10 },
        },
      ],
    }),
  },
];
