/**
 * k8s/ renders offline (`kubectl kustomize`) and every rendered object is one the API server and
 * KEDA would accept: validated with the Kubernetes and KEDA JSON schemas of `kubernetes-models` /
 * `@kubernetes-models/keda` (types, formats, required fields) and type-checked against their
 * TypeScript models with excess-property checks (the schemas allow unknown fields; kubectl's strict
 * field validation does not). Also: every process in services/ (but the CLI) has a workload, with
 * the env contract and /healthz /readyz probes, and KEDA's triggers name the node's work consumers.
 * The cluster overlay grants each API-calling process exactly the rows of docs/cluster-rbac.md, and
 * no other workload mounts a service account token.
 * Skips with the reason where kubectl is missing.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';
import { parseAllDocuments } from 'yaml';
import { Consumers, DEFAULT_PARTITIONS, Streams } from '@splitlet/api';
import { repoRoot } from './harness.ts';

type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; spec?: Record<string, unknown>; data?: Record<string, string> };
type Container = {
  name: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom?: { configMapRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
};

function kubectl(): string | undefined {
  for (const p of ['/usr/bin/kubectl', '/usr/local/bin/kubectl']) if (existsSync(p)) return p;
  try {
    return execFileSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

const KUBECTL = kubectl();
const skip = KUBECTL === undefined ? 'kubectl is not installed (needed for `kubectl kustomize`)' : false;
const TREES = ['k8s', 'k8s/overlays/sim', 'k8s/overlays/cluster'];

function render(dir: string): K8sObject[] {
  const text = execFileSync(KUBECTL!, ['kustomize', join(repoRoot, dir)], { encoding: 'utf8' });
  return parseAllDocuments(text)
    .map((d) => d.toJS() as K8sObject)
    .filter((o) => o !== null);
}

/** `kubernetes-models/<group>/<version>/<Kind>` or the KEDA package for keda.sh. */
function modelModule(o: K8sObject): { module: string; type: string } {
  const [groupOrVersion, version] = o.apiVersion.split('/') as [string, string | undefined];
  const path = version === undefined ? `v1/${o.kind}` : `${groupOrVersion}/${version}/${o.kind}`;
  const pkg = groupOrVersion === 'keda.sh' ? '@kubernetes-models/keda' : 'kubernetes-models';
  return { module: `${pkg}/${path}`, type: `I${o.kind}` };
}

async function schemaErrors(o: K8sObject): Promise<string | undefined> {
  const { module } = modelModule(o);
  const mod = (await import(module)) as Record<string, new (d: unknown) => { validate(): void }>;
  const Model = mod[o.kind];
  if (Model === undefined) return `no model for ${o.apiVersion} ${o.kind}`;
  try {
    new Model(o).validate();
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** Type-checks each object as an object literal `satisfies I<Kind>`: unknown fields are errors. */
function typeErrors(objects: readonly K8sObject[]): string[] {
  const file = join(repoRoot, 'test', 'integration', '__k8s_objects__.ts');
  const lines: string[] = [];
  objects.forEach((o, i) => {
    const { module, type } = modelModule(o);
    lines.push(`import type { ${type} as T${i} } from '${module}';`);
    lines.push(`export const o${i} = ${JSON.stringify(o)} satisfies T${i};`);
  });
  const source = lines.join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) => (name === file ? ts.createSourceFile(name, source, lang) : getSourceFile(name, lang, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
    const idx = where ? Math.floor(where.line / 2) : -1;
    const obj = objects[idx];
    return `${obj ? `${obj.kind}/${obj.metadata.name}` : '?'}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

function workloads(objects: readonly K8sObject[]): { owner: string; containers: Container[] }[] {
  return objects
    .filter((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet')
    .map((o) => ({ owner: `${o.kind}/${o.metadata.name}`, containers: (o.spec?.['template'] as { spec: { containers: Container[] } }).spec.containers }));
}

/**
 * Processes that have no workload in k8s/, with the reason (k8s/README.md says the same):
 * apiserver is the embedded Kubernetes API server of a single machine (`splitlet up`, compose), for
 * kubectl where there is no cluster; on a cluster, kubectl talks to the cluster's own API server.
 */
const NOT_IN_K8S: ReadonlyMap<string, string> = new Map([['apiserver', 'the embedded API server of one machine; a cluster has its own']]);

/** The processes: services with a composition root, but the CLI and those of {@link NOT_IN_K8S}. */
function processes(): string[] {
  return readdirSync(join(repoRoot, 'services'))
    .filter((s) => s !== 'cli' && !NOT_IN_K8S.has(s) && existsSync(join(repoRoot, 'services', s, 'src', 'main.ts')))
    .sort();
}

describe('k8s/ (kustomize base and the sim overlay)', { skip }, () => {
  const rendered = skip ? new Map<string, K8sObject[]>() : new Map(TREES.map((t) => [t, render(t)]));

  test('every rendered object passes the Kubernetes / KEDA schema', async () => {
    for (const [tree, objects] of rendered) {
      assert.ok(objects.length >= 10, `${tree} renders the stack (${objects.length} objects)`);
      for (const o of objects) assert.equal(await schemaErrors(o), undefined, `${tree}: ${o.kind}/${o.metadata.name}`);
    }
  });

  test('every rendered object type-checks against its model, unknown fields included', { timeout: 120_000 }, () => {
    for (const [tree, objects] of rendered) assert.deepEqual(typeErrors(objects), [], tree);
  });

  test('the checks fail on a wrong type and on an unknown field (they are not vacuous)', { timeout: 120_000 }, async () => {
    const objects = rendered.get('k8s')!;
    const deployment = structuredClone(objects.find((o) => o.kind === 'Deployment')!);
    (deployment.spec as Record<string, unknown>)['replicas'] = 'two';
    assert.match((await schemaErrors(deployment)) ?? '', /replicas must be integer/);
    const scaled = structuredClone(objects.find((o) => o.kind === 'ScaledObject')!);
    (scaled.spec as Record<string, unknown>)['minReplicaCountt'] = 1;
    const daemonSet = structuredClone(objects.find((o) => o.kind === 'DaemonSet')!);
    (daemonSet.spec!['template'] as { spec: { containers: Record<string, unknown>[] } }).spec.containers[0]!['livenesProbe'] = {};
    const errors = typeErrors([scaled, daemonSet]);
    assert.equal(errors.length, 2, errors.join('\n'));
    assert.match(errors[0]!, /ScaledObject\/pod-worker: .*minReplicaCountt\W+ does not exist/);
    assert.match(errors[1]!, /DaemonSet\/splitlet-node: .*livenesProbe\W+ does not exist/);
  });

  test('every process in services/ has a workload, with the env contract and /healthz /readyz probes', () => {
    const seen = new Map<string, string>();
    for (const [tree, objects] of rendered) {
      const env = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('splitlet-env'))!;
      assert.ok(env?.data?.['NATS_URL'] && env.data['NODE_NAME'] && env.data['HEALTH_HOST'] === '0.0.0.0', `${tree}: splitlet-env carries the env contract`);
      for (const w of workloads(objects)) {
        for (const c of w.containers) {
          const proc = c.args?.[0];
          assert.ok(proc, `${w.owner}/${c.name} names its process in args`);
          seen.set(proc, `${tree}: ${w.owner}`);
          const port = c.env?.find((e) => e.name === 'HEALTH_PORT')?.value;
          assert.ok(port && Number(port) > 0, `${w.owner}/${c.name} has a fixed HEALTH_PORT`);
          const portName = c.ports?.find((p) => p.containerPort === Number(port))?.name;
          assert.equal(c.livenessProbe?.httpGet?.path, '/healthz', `${w.owner}/${c.name} liveness`);
          assert.equal(c.readinessProbe?.httpGet?.path, '/readyz', `${w.owner}/${c.name} readiness`);
          assert.ok([portName, Number(port)].includes(c.livenessProbe?.httpGet?.port), `${w.owner}/${c.name} probes its HEALTH_PORT`);
          if (proc !== 'sim-runtime')
            assert.ok(
              c.envFrom?.some((f) => f.configMapRef?.name === env.metadata.name),
              `${w.owner}/${c.name} reads splitlet-env`,
            );
          if (proc !== 'sim-runtime') {
            // Its own NATS identity, the password from the Secret (k8s/README.md, "NATS identities").
            assert.equal(c.env?.find((e) => e.name === 'NATS_USER')?.value, proc, `${w.owner}/${c.name} connects to NATS as ${proc}`);
            const ref = c.env?.find((e) => e.name === 'NATS_PASSWORD')?.valueFrom?.secretKeyRef;
            assert.deepEqual([ref?.name, ref?.key], ['splitlet-nats-users', proc], `${w.owner}/${c.name} reads its NATS password from the Secret`);
          }
        }
      }
    }
    for (const p of NOT_IN_K8S.keys()) assert.ok(existsSync(join(repoRoot, 'services', p, 'src', 'main.ts')), `${p} is excluded from k8s/ but is no process in services/`);
    for (const p of NOT_IN_K8S.keys()) assert.ok(!seen.has(p), `${p} is excluded from k8s/ (${NOT_IN_K8S.get(p)}) but has a workload: ${seen.get(p)}`);
    const missing = processes().filter((p) => !seen.has(p));
    assert.deepEqual(missing, [], `processes without a workload in k8s/: ${missing.join(', ')}`);
  });

  test('KEDA scales pod-worker on every work consumer of the node, and the node pod runs on that node', () => {
    const objects = rendered.get('k8s')!;
    const node = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('splitlet-env'))!.data!['NODE_NAME']!;
    const so = objects.find((o) => o.kind === 'ScaledObject')!;
    assert.equal((so.spec!['scaleTargetRef'] as { name: string }).name, 'pod-worker');
    const triggers = so.spec!['triggers'] as { type: string; metadata: Record<string, string> }[];
    assert.ok(triggers.every((t) => t.type === 'nats-jetstream' && t.metadata['stream'] === Streams.work && Number(t.metadata['lagThreshold']) > 0));
    assert.deepEqual(triggers.map((t) => t.metadata['consumer']).sort(), Array.from({ length: DEFAULT_PARTITIONS }, (_, p) => Consumers.podWorkerPartition(node, p)).sort());
    const ds = objects.find((o) => o.kind === 'DaemonSet')!;
    assert.equal((ds.spec!['template'] as { spec: { nodeSelector: Record<string, string> } }).spec.nodeSelector['kubernetes.io/hostname'], node);
  });

  test('cluster mode: each process that calls the API has its own ServiceAccount with exactly the verbs of docs/cluster-rbac.md; no other workload has a token', () => {
    const objects = rendered.get('k8s/overlays/cluster')!;
    // The documented table: process → "apiGroup|resource|namespace" → verbs.
    const doc = readFileSync(join(repoRoot, 'docs', 'cluster-rbac.md'), 'utf8');
    const expected = new Map<string, Map<string, string[]>>();
    for (const line of doc.split('\n')) {
      const cells = line.split('|').map((c) => c.trim());
      if (cells.length < 6 || !/^`/.test(cells[2] ?? '')) continue;
      const [, proc, group, resource, verbs] = cells as [string, string, string, string, string];
      const ns = /namespace `([^`]+)`/.exec(resource)?.[1] ?? '*';
      const key = `${group.replaceAll('`', '').replaceAll('"', '')}|${/`([^`]+)`/.exec(resource)![1]}|${ns}`;
      if (!expected.has(proc)) expected.set(proc, new Map());
      expected.get(proc)!.set(
        key,
        verbs
          .split(',')
          .map((v) => v.trim())
          .sort(),
      );
    }
    assert.deepEqual([...expected.keys()].sort(), ['config-source', 'status-manager'], 'the table names the API-calling processes');

    type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
    type Binding = K8sObject & { roleRef: { kind: string; name: string }; subjects: { kind: string; name: string; namespace?: string }[] };
    const roles = new Map(objects.filter((o) => o.kind === 'ClusterRole').map((o) => [o.metadata.name, (o as unknown as { rules: Rule[] }).rules]));
    const granted = (sa: string): Map<string, string[]> => {
      const out = new Map<string, string[]>();
      for (const b of objects.filter((o): o is Binding => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')) {
        if (!b.subjects.some((s) => s.kind === 'ServiceAccount' && s.name === sa && s.namespace === 'splitlet')) continue;
        assert.equal(b.roleRef.kind, 'ClusterRole', `${b.kind}/${b.metadata.name} refers to a ClusterRole`);
        const ns = b.kind === 'RoleBinding' ? b.metadata.namespace! : '*';
        for (const r of roles.get(b.roleRef.name) ?? assert.fail(`${b.metadata.name} binds the missing ClusterRole ${b.roleRef.name}`)) {
          for (const g of r.apiGroups) for (const res of r.resources) out.set(`${g}|${res}|${ns}`, [...r.verbs].sort());
        }
      }
      return out;
    };
    const deployments = workloads(objects);
    for (const [proc, rules] of expected) {
      const w = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === proc)!;
      const pod = (
        w.spec!['template'] as {
          spec: { serviceAccountName: string; automountServiceAccountToken: boolean; containers: Container[]; volumes: { name: string; configMap?: { name: string } }[] };
        }
      ).spec;
      assert.equal(pod.serviceAccountName, `splitlet-${proc}`, `${proc} runs as its own service account`);
      assert.equal(pod.automountServiceAccountToken, true, `${proc} mounts its token`);
      assert.equal(pod.containers[0]!.env?.find((e) => e.name === 'KUBECONFIG')?.value, '/etc/splitlet/kubeconfig');
      assert.ok(
        pod.volumes.some((v) => v.configMap?.name.startsWith('splitlet-kubeconfig')),
        `${proc} mounts the in-cluster kubeconfig`,
      );
      assert.deepEqual(Object.fromEntries(granted(`splitlet-${proc}`)), Object.fromEntries(rules), `${proc}: the rendered RBAC is the documented table`);
    }
    for (const o of objects.filter((x) => x.kind === 'Deployment' || x.kind === 'DaemonSet')) {
      if (expected.has(o.metadata.name)) continue;
      const pod = (o.spec!['template'] as { spec: { automountServiceAccountToken?: boolean; serviceAccountName?: string } }).spec;
      assert.equal(pod.automountServiceAccountToken, false, `${o.kind}/${o.metadata.name} mounts no token`);
      assert.deepEqual(Object.fromEntries(granted(pod.serviceAccountName ?? 'default')), {}, `${o.kind}/${o.metadata.name} has no role`);
    }
    assert.ok(deployments.length > 0);
    const kubeconfig = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('splitlet-kubeconfig'))!;
    const kc = parseAllDocuments(kubeconfig.data!['kubeconfig']!)[0]!.toJS() as { clusters: { cluster: { server: string } }[]; users: { user: Record<string, string> }[] };
    assert.equal(kc.clusters[0]!.cluster.server, 'https://kubernetes.default.svc');
    assert.equal(kc.users[0]!.user['token-file'], '/var/run/secrets/kubernetes.io/serviceaccount/token');
  });
});
