/**
 * "The kubelet's examples work" (issue 10): the pod examples of the Kubernetes documentation that
 * need neither an API object nor a Service, as rows of the pod contract (`pod-contract.test.ts`
 * runs them on the simulator and on containerd). Each expects the output or status the page shows
 * for a real kubelet; images are the local busybox, commands shortened to end (restartPolicy Never)
 * where the page's pod sleeps so that someone runs `kubectl exec`/`logs` by hand.
 */
import { container, IMAGE, pod, started } from './pod-scenarios.ts';
import type { PodScenario } from './pod-scenarios.ts';

export const DOC_EXAMPLES: readonly PodScenario[] = [
  {
    // tasks/inject-data-application/define-interdependent-environment-variables (dependent-envars.yaml)
    id: 'doc-dependent-envars',
    covers: 'docs: dependent environment variables, $(VAR) expansion in order, $$ escapes, an undefined reference kept',
    manifest: pod('doc-dependent-envars', {
      restartPolicy: 'Never',
      containers: [
        container('dependent-envars-demo', ['sh', '-c'], {
          args: ["printf UNCHANGED_REFERENCE=$UNCHANGED_REFERENCE'\\n'; printf SERVICE_ADDRESS=$SERVICE_ADDRESS'\\n';printf ESCAPED_REFERENCE=$ESCAPED_REFERENCE'\\n'"],
          env: [
            { name: 'SERVICE_PORT', value: '80' },
            { name: 'SERVICE_IP', value: '172.17.0.1' },
            { name: 'UNCHANGED_REFERENCE', value: '$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)' },
            { name: 'PROTOCOL', value: 'https' },
            { name: 'SERVICE_ADDRESS', value: '$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)' },
            { name: 'ESCAPED_REFERENCE', value: '$$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)' },
          ],
        }),
      ],
    }),
    expect: {
      phase: 'Succeeded',
      containers: [{ name: 'dependent-envars-demo', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 }],
      events: started('dependent-envars-demo'),
    },
    checks: [
      {
        kind: 'logs',
        container: 'dependent-envars-demo',
        lines: ['UNCHANGED_REFERENCE=$(PROTOCOL)://172.17.0.1:80', 'SERVICE_ADDRESS=https://172.17.0.1:80', 'ESCAPED_REFERENCE=$(PROTOCOL)://172.17.0.1:80'],
      },
    ],
  },

  {
    // tasks/access-application-cluster/communicate-containers-same-pod-shared-volume (two-container-pod.yaml),
    // with an init container as in tasks/configure-pod-container/configure-pod-initialization.
    id: 'doc-shared-volume',
    covers: 'docs: an init container and two containers sharing an emptyDir; the reader sees what the others wrote',
    manifest: pod('doc-shared-volume', {
      restartPolicy: 'Never',
      volumes: [{ name: 'shared-data', emptyDir: {} }],
      initContainers: [
        container('install', ['sh', '-c', 'echo "<h1>from the init container</h1>" > /work-dir/index.html'], { volumeMounts: [{ name: 'shared-data', mountPath: '/work-dir' }] }),
      ],
      containers: [
        container('debian-container', ['/bin/sh', '-c'], {
          args: ['echo Hello from the debian container >> /pod-data/index.html; touch /pod-data/written'],
          volumeMounts: [{ name: 'shared-data', mountPath: '/pod-data' }],
        }),
        container('nginx-container', ['sh', '-c', 'until [ -f /usr/share/nginx/html/written ]; do sleep 1; done; cat /usr/share/nginx/html/index.html'], {
          volumeMounts: [{ name: 'shared-data', mountPath: '/usr/share/nginx/html' }],
        }),
      ],
    }),
    expect: {
      phase: 'Succeeded',
      initContainers: [{ name: 'install', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 }],
      containers: [
        { name: 'debian-container', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 },
        { name: 'nginx-container', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 },
      ],
      events: started('install', 'debian-container', 'nginx-container'),
    },
    checks: [{ kind: 'logs', container: 'nginx-container', lines: ['<h1>from the init container</h1>', 'Hello from the debian container'] }],
  },

  {
    // tasks/configure-pod-container/attach-handler-lifecycle-event (lifecycle-events.yaml)
    id: 'doc-lifecycle-events',
    covers: 'docs: a postStart exec hook writes the file the container then reads (in /tmp: busybox has no /usr/share)',
    manifest: pod('doc-lifecycle-events', {
      restartPolicy: 'Never',
      containers: [
        container('lifecycle-demo-container', ['sh', '-c', 'until [ -f /tmp/message ]; do sleep 1; done; cat /tmp/message'], {
          lifecycle: { postStart: { exec: { command: ['/bin/sh', '-c', 'echo Hello from the postStart handler > /tmp/message'] } } },
        }),
      ],
    }),
    expect: {
      phase: 'Succeeded',
      containers: [{ name: 'lifecycle-demo-container', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 }],
      events: started('lifecycle-demo-container'),
      noEvents: ['FailedPostStartHook'],
    },
    checks: [{ kind: 'logs', container: 'lifecycle-demo-container', lines: ['Hello from the postStart handler'] }],
  },

  {
    // tasks/configure-pod-container/security-context (security-context.yaml): `id` and the fsGroup-owned volume.
    id: 'doc-security-context',
    covers: 'docs: runAsUser/runAsGroup/fsGroup/supplementalGroups show in `id`; the fsGroup volume is writable by the user',
    manifest: pod('doc-security-context', {
      restartPolicy: 'Never',
      securityContext: { runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000] },
      volumes: [{ name: 'sec-ctx-vol', emptyDir: {} }],
      containers: [
        container('sec-ctx-demo', ['sh', '-c', 'id; echo hello > /data/demo/testfile; cat /data/demo/testfile'], {
          volumeMounts: [{ name: 'sec-ctx-vol', mountPath: '/data/demo' }],
          securityContext: { allowPrivilegeEscalation: false },
        }),
      ],
    }),
    expect: {
      phase: 'Succeeded',
      containers: [{ name: 'sec-ctx-demo', state: 'terminated', reason: 'Completed', exitCode: 0, restartCount: 0 }],
      events: started('sec-ctx-demo'),
    },
    checks: [
      {
        kind: 'logs',
        container: 'sec-ctx-demo',
        lines: ['uid=1000 gid=3000 groups=2000,3000,4000', 'hello'],
      },
    ],
  },

  // tasks/configure-pod-container/quality-service-pod: the three classes in status.qosClass.
  ...(
    [
      ['guaranteed', 'Guaranteed', { limits: { memory: '200Mi', cpu: '700m' }, requests: { memory: '200Mi', cpu: '700m' } }],
      ['burstable', 'Burstable', { limits: { memory: '200Mi' }, requests: { memory: '100Mi' } }],
      ['besteffort', 'BestEffort', undefined],
    ] as const
  ).map(([id, qosClass, resources]): PodScenario => ({
    id: `doc-qos-${id}`,
    covers: `docs: a ${qosClass} pod reports status.qosClass ${qosClass}`,
    manifest: pod(`doc-qos-${id}`, { containers: [{ name: `qos-demo-ctr`, image: IMAGE, command: ['sleep', '3600'], ...(resources === undefined ? {} : { resources }) }] }),
    expect: {
      phase: 'Running',
      qosClass,
      containers: [{ name: 'qos-demo-ctr', state: 'running', restartCount: 0 }],
      events: started('qos-demo-ctr'),
    },
  })),
];
