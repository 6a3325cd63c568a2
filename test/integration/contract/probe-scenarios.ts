/**
 * The probe contract's pods: each a manifest the kubelet's prober would treat the same on any
 * runtime, named by what it covers. `probe-contract.test.ts` runs them on sim and containerd and
 * checks each with the kubelet's texts. `runtimes` limits a scenario to the runtimes that can serve
 * it. HTTP and TCP probes dial the pod IP: containerd's CNI bridge, or the simulator's 127.77.x.x
 * loopback address its `httpd`/`nc -l`/nginx listen on.
 */

const IMAGE = 'busybox:1.36';

export type ProbeScenarioId =
  'readiness-flap' | 'liveness-restart' | 'startup-gate' | 'startup-fail' | 'exec-timeout' | 'sidecar-startup' | 'http-tcp' | 'steady' | 'web-deployment';

export interface ProbeScenario {
  readonly id: ProbeScenarioId;
  readonly covers: string;
  readonly runtimes: readonly RuntimeName[];
  /** The pod, the same on every runtime, or per runtime (an image swapped for the local busybox). */
  readonly manifest: Readonly<Record<string, unknown>> | ((runtime: RuntimeName) => Readonly<Record<string, unknown>>);
}

type RuntimeName = 'sim' | 'containerd';

/** A scenario's manifest on a runtime. */
export function manifestOn(sc: ProbeScenario, runtime: RuntimeName): Readonly<Record<string, unknown>> {
  return typeof sc.manifest === 'function' ? sc.manifest(runtime) : sc.manifest;
}

const HTML = '/usr/share/nginx/html';

/**
 * The pod template of an ordinary web Deployment (labels with a pod-template-hash, a named port,
 * requests and limits, env with a fieldRef, a postStart hook writing the health file, startup,
 * readiness and liveness probes over HTTP), as such projects write it. The simulator runs the real
 * reference `nginx:1.27`; containerd the local busybox serving the same directory with `httpd`.
 * Readiness asks for `/ready`, which the test creates: the pod is Ready only once that probe passes.
 */
function webDeployment(runtime: RuntimeName): Record<string, unknown> {
  const image =
    runtime === 'sim'
      ? { image: 'nginx:1.27' }
      : { image: IMAGE, command: ['sh', '-c', `mkdir -p ${HTML} && echo '<h1>web</h1>' > ${HTML}/index.html && exec httpd -f -p 80 -h ${HTML}`] };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web-deployment', labels: { app: 'web', tier: 'frontend', 'pod-template-hash': '7c5ddbdf54' } },
    spec: {
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: 'web',
          ...image,
          imagePullPolicy: 'IfNotPresent',
          ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }],
          env: [
            { name: 'NGINX_ENTRYPOINT_QUIET_LOGS', value: '1' },
            { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          ],
          resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '500m', memory: '128Mi' } },
          lifecycle: { postStart: { exec: { command: ['sh', '-c', `mkdir -p ${HTML} && echo ok > ${HTML}/healthz`] } } },
          startupProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 1, failureThreshold: 30 },
          readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 1, timeoutSeconds: 2, successThreshold: 1, failureThreshold: 1 },
          livenessProbe: {
            httpGet: { path: '/healthz', port: 'http', httpHeaders: [{ name: 'X-Probe', value: 'liveness' }] },
            initialDelaySeconds: 2,
            periodSeconds: 1,
            timeoutSeconds: 2,
            failureThreshold: 2,
          },
        },
      ],
    },
  };
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
      containers: [{ name: 'app', image: IMAGE, command: ['sleep', '3600'], startupProbe: { exec: { command: ['cat', '/tmp/never'] }, periodSeconds: 1, failureThreshold: 2 } }],
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
          // 8 s before the probe can pass: its first run fails even on a loaded machine.
          command: ['sh', '-c', 'sleep 8; touch /tmp/up; sleep 3600'],
          startupProbe: { exec: { command: ['cat', '/tmp/up'] }, periodSeconds: 1, failureThreshold: 30 },
        },
      ],
      containers: [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }],
    }),
  },
  {
    id: 'http-tcp',
    covers: 'httpGet against busybox httpd on the pod IP (named port), a 404, tcpSocket open and refused',
    runtimes: both,
    manifest: pod('http-tcp', {
      containers: [
        {
          name: 'web',
          image: IMAGE,
          command: ['sh', '-c', 'mkdir -p /www && echo ok > /www/healthz && exec httpd -f -p 8080 -h /www'],
          ports: [{ name: 'http', containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 },
          // Not the first instant: a probe that beats httpd to its listen() (the container just started, a loaded
          // machine) is refused and, at failureThreshold 1, restarts it; the kubelet would do the same.
          livenessProbe: { tcpSocket: { port: 8080 }, initialDelaySeconds: 2, periodSeconds: 1, failureThreshold: 3 },
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
  {
    id: 'web-deployment',
    covers: "done when: a Deployment-style web pod is Ready only when its readiness probe passes and restarted when its liveness probe fails, with the kubelet's events",
    runtimes: both,
    manifest: webDeployment,
  },
];
