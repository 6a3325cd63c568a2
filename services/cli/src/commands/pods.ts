/**
 * `apply`, `delete pod`, `get pods`, `describe pod`.
 *
 * Two ways in for a pod:
 * - on the machine of a `splitlet up`, the manifest directory is the API: `apply` writes a manifest
 *   file there (a static pod, named `<name>-<node>`) and `delete` removes it; the file source picks
 *   the change up through inotify within milliseconds;
 * - with `--nats-url` (any host), `apply` sends the pods to config-source's `api` source over the
 *   bus (`sl.<node>.rpc.config.apply`; the pod keeps its name and gets a random UID, as from an API
 *   server) and `delete` of such a pod asks the same source to remove it.
 */
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { ApplyPodsReply, ApplyPodsRequest, DeletePodReply, DeletePodRequest, hasErrorCode, Pod, Subjects } from '@splitlet/api';
import type { StateDir } from '../state-dir.js';
import { CliError } from '../state-dir.js';
import { findPod, listPods, podEvents } from '../node-view.js';
import type { CliTarget } from '../target.js';
import { podRow, podTable } from '../printers/pod-table.js';
import { describePod } from '../printers/describe.js';

const DNS1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Parses the pods in a YAML/JSON text, with errors naming the document. */
export function parsePods(text: string, origin: string): Pod[] {
  const docs = parseAllDocuments(text);
  const pods: Pod[] = [];
  docs.forEach((doc, i) => {
    if (doc.errors.length) throw new CliError(`error parsing ${origin} (document ${i + 1}): ${doc.errors[0]!.message}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return;
    const kind = (value as { kind?: unknown }).kind;
    if (kind !== 'Pod') {
      throw new CliError(`error validating ${origin} (document ${i + 1}): kind ${JSON.stringify(kind ?? null)} is not supported: splitlet accepts kind Pod`);
    }
    const parsed = Pod.safeParse(value);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; ');
      throw new CliError(`error validating ${origin} (document ${i + 1}): ${issues}`);
    }
    const name = parsed.data.metadata.name;
    if (!name) throw new CliError(`error validating ${origin} (document ${i + 1}): invalid pod: name is needed for the pod`);
    if (!DNS1123.test(name) || name.length > 253) {
      throw new CliError(
        `error validating ${origin} (document ${i + 1}): metadata.name: Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`,
      );
    }
    pods.push(parsed.data);
  });
  if (pods.length === 0) throw new CliError(`no objects passed to apply (${origin} has no pod)`);
  return pods;
}

function manifestFileFor(s: StateDir, pod: Pod): string {
  return join(s.manifests, `${pod.metadata.namespace ?? 'default'}_${pod.metadata.name}.yaml`);
}

/** `apply -f`: writes each pod to its own manifest file (atomically: a dotfile, then rename). */
export function apply(s: StateDir, text: string, origin: string, out: NodeJS.WritableStream): void {
  const pods = parsePods(text, origin);
  for (const pod of pods) {
    const file = manifestFileFor(s, pod);
    let existed: boolean;
    let unchanged = false;
    try {
      const prev = readFileSync(file, 'utf8');
      existed = true;
      unchanged = prev === stringify(pod);
    } catch {
      existed = false;
    }
    if (!unchanged) {
      const tmp = join(s.manifests, `.${pod.metadata.name}.yaml.tmp`);
      writeFileSync(tmp, stringify(pod));
      renameSync(tmp, file);
    }
    out.write(`pod/${pod.metadata.name} ${unchanged ? 'unchanged' : existed ? 'configured' : 'created'}\n`);
  }
}

/** A refused request's message as the user reads it (the remote error's text, or the bus error). */
function remoteError(e: unknown, what: string): CliError {
  if (hasErrorCode(e, 'NoResponders')) return new CliError(`cannot ${what}: no config-source with the api source answers for this node (is it running, with API_SOURCE on?)`);
  if (hasErrorCode(e, 'Remote')) {
    return new CliError(`Error from server (${(e as { remoteCode?: string }).remoteCode ?? 'Unknown'}): ${(e as Error).message}`);
  }
  return new CliError(`cannot ${what}: ${e instanceof Error ? e.message : String(e)}`);
}

/** `apply -f` over the bus: the pods go to config-source's api source, in batches of 100. */
export async function applyRemote(t: CliTarget, text: string, origin: string, out: NodeJS.WritableStream): Promise<void> {
  const pods = parsePods(text, origin);
  for (let i = 0; i < pods.length; i += 100) {
    let reply: ApplyPodsReply;
    try {
      reply = await t.bus.request(
        ApplyPodsRequest,
        ApplyPodsReply,
        Subjects.rpc.config(t.nodeName, 'apply'),
        { type: 'kubelet.config.ApplyPods.v1', pods: pods.slice(i, i + 100), origin },
        { timeoutMs: 30_000 },
      );
    } catch (e) {
      throw remoteError(e, `apply ${origin}`);
    }
    for (const r of reply.results) out.write(`pod/${r.name} ${r.outcome}\n`);
  }
}

/**
 * `delete pod NAME`: a pod of the api source is removed over the bus; a static pod by removing its
 * manifest (file or document) from the local manifest directory. Optionally waits until it is gone.
 */
export async function deletePod(t: CliTarget, name: string, namespace: string, opts: { wait: boolean; timeoutMs: number }, out: NodeJS.WritableStream): Promise<void> {
  const view = findPod(await listPods(t.bus, t.nodeName), name, namespace, t.nodeName);
  const source = view?.pod.metadata.annotations?.['kubernetes.io/config.source'];
  if (view !== undefined && source === 'bus') {
    try {
      await t.bus.request(
        DeletePodRequest,
        DeletePodReply,
        Subjects.rpc.config(t.nodeName, 'delete'),
        { type: 'kubelet.config.DeletePod.v1', namespace, name: view.pod.metadata.name! },
        { timeoutMs: 30_000 },
      );
    } catch (e) {
      throw remoteError(e, `delete pod ${name}`);
    }
  } else if (t.local !== undefined) {
    deleteManifest(t.local.stateDir, t.nodeName, name, namespace);
  } else if (view !== undefined) {
    throw new CliError(`pod "${name}" comes from the node's ${source ?? 'unknown'} source (a static pod): remove its manifest on node ${t.nodeName}`);
  } else {
    throw new CliError(`Error from server (NotFound): pods "${name}" not found`);
  }
  out.write(`pod "${name}" deleted\n`);
  if (!opts.wait) return;
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    const pods = await listPods(t.bus, t.nodeName);
    if (!findPod(pods, name, namespace, t.nodeName)) return;
    if (Date.now() > deadline) throw new CliError(`timed out waiting for pod "${name}" to be deleted`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Removes a static pod's manifest (its file, or its document of a multi-document file). */
function deleteManifest(s: StateDir, nodeName: string, name: string, namespace: string): void {
  const matches = (p: Pod): boolean => (p.metadata.namespace ?? 'default') === namespace && (p.metadata.name === name || `${p.metadata.name}-${nodeName}` === name);
  let found = false;
  for (const f of readdirSync(s.manifests).sort()) {
    if (f.startsWith('.')) continue;
    const path = join(s.manifests, f);
    if (!statSync(path).isFile()) continue;
    let pods: Pod[];
    try {
      pods = parsePods(readFileSync(path, 'utf8'), path);
    } catch {
      continue;
    }
    if (!pods.some(matches)) continue;
    found = true;
    const rest = pods.filter((p) => !matches(p));
    if (rest.length === 0) rmSync(path);
    else writeFileSync(path, rest.map((p) => stringify(p)).join('---\n'));
  }
  if (!found) throw new CliError(`Error from server (NotFound): pods "${name}" not found in ${s.manifests}`);
}

/**
 * `get pods [NAME] [-n NS | -A] [-o wide|json|yaml|name]`: as kubectl, the current namespace
 * (`default`, or `-n`) unless `allNamespaces`, which lists every namespace with a NAMESPACE column.
 */
export async function getPods(
  t: CliTarget,
  name: string | undefined,
  scope: { namespace?: string | undefined; allNamespaces?: boolean | undefined },
  output: string | undefined,
  out: NodeJS.WritableStream,
): Promise<void> {
  const all = scope.allNamespaces === true;
  if (all && name !== undefined) throw new CliError('error: a resource cannot be retrieved by name across all namespaces');
  const namespace = scope.namespace ?? 'default';
  let pods = await listPods(t.bus, t.nodeName);
  if (!all) pods = pods.filter((p) => (p.pod.metadata.namespace ?? 'default') === namespace);
  if (name !== undefined) {
    const p = findPod(pods, name, namespace, t.nodeName);
    if (!p) throw new CliError(`Error from server (NotFound): pods "${name}" not found`);
    pods = [p];
  }
  const now = Date.now();
  const asObject = (v: (typeof pods)[number]): Pod => ({ ...v.pod, apiVersion: 'v1', kind: 'Pod' });
  switch (output) {
    case undefined:
    case 'wide':
      if (pods.length === 0) {
        out.write(all ? 'No resources found\n' : `No resources found in ${namespace} namespace.\n`);
        return;
      }
      out.write(
        podTable(
          pods.map((p) => podRow(p.pod, now, p.terminating)),
          output === 'wide',
          all ? pods.map((p) => p.pod.metadata.namespace ?? 'default') : undefined,
        ),
      );
      return;
    case 'json':
    case 'yaml': {
      const doc = name !== undefined ? asObject(pods[0]!) : { apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '' }, items: pods.map(asObject) };
      out.write(output === 'json' ? `${JSON.stringify(doc, null, 4)}\n` : stringify(doc));
      return;
    }
    case 'name':
      for (const p of pods) out.write(`pod/${p.pod.metadata.name}\n`);
      return;
    default:
      throw new CliError(`unable to match a printer suitable for the output format "${output}", allowed formats are: json,name,wide,yaml`);
  }
}

/** `describe pod NAME`. */
export async function describe(t: CliTarget, name: string, namespace: string, out: NodeJS.WritableStream): Promise<void> {
  const p = findPod(await listPods(t.bus, t.nodeName), name, namespace, t.nodeName);
  if (!p) throw new CliError(`Error from server (NotFound): pods "${name}" not found`);
  const uid = p.pod.metadata.uid;
  const events = uid ? await podEvents(t.bus, t.nodeName, uid) : [];
  out.write(describePod(p.pod, events, Date.now(), p.terminating));
}
