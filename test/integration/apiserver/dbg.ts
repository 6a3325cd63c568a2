import { spawn, execFileSync } from 'node:child_process';
import { startApiServer } from './harness.ts';
const api = await startApiServer();
try {
  execFileSync('kubectl', ['--kubeconfig', api.kubeconfig, 'create', 'configmap', 'x']);
  await api.request('POST', '/api/v1/namespaces/default/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
  const w = spawn('kubectl', ['--kubeconfig', api.kubeconfig, 'get', 'pods', '-w', '-v=9'], { stdio: ['ignore', 'pipe', 'pipe'] });
  w.stdout.on('data', (c) => process.stdout.write('OUT ' + c));
  w.stderr.on('data', (c) => process.stdout.write('ERR ' + String(c).slice(0, 600)));
  await new Promise((r) => setTimeout(r, 4000));
  await api.request('POST', '/api/v1/namespaces/default/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'other' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
  await new Promise((r) => setTimeout(r, 3000));
  w.kill();
} finally { await api.stop(); }
