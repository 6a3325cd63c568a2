/** Shared builders for the cri-adapter tests. */
import type { BoundPod, Container } from '@splitlet/api';

/** A bound pod with the given containers (defaults: one `busybox` container named `main`). */
export function aPod(
  overrides: { name?: string; namespace?: string; uid?: string; containers?: Container[]; spec?: Partial<BoundPod['spec']>; metadata?: Partial<BoundPod['metadata']> } = {},
): BoundPod {
  const name = overrides.name ?? 'web';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: overrides.namespace ?? 'default',
      uid: overrides.uid ?? `uid-${name}`,
      ...(overrides.metadata ?? {}),
    },
    spec: {
      containers: overrides.containers ?? [{ name: 'main', image: 'busybox:1.36', command: ['sleep', '3600'] }],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      ...(overrides.spec ?? {}),
    },
  };
}
