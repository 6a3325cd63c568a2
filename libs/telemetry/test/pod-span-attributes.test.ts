import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { podSpanAttributes } from '../src/index.js';

describe('podSpanAttributes', () => {
  it('names the pod with the semantic-convention keys only', () => {
    assert.deepEqual(podSpanAttributes({ uid: 'u-1', name: 'web', namespace: 'default' }), {
      'k8s.pod.uid': 'u-1',
      'k8s.pod.name': 'web',
      'k8s.namespace.name': 'default',
    });
  });

  it('takes a pod metadata object as it is', () => {
    const metadata = { uid: 'u-2', name: 'db', namespace: 'prod', labels: { app: 'db' } };
    assert.deepEqual(Object.keys(podSpanAttributes(metadata)).sort(), ['k8s.namespace.name', 'k8s.pod.name', 'k8s.pod.uid']);
  });
});
