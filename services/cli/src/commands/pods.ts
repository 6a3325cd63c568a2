/**
 * `apply`, `delete pod`, `get pods`, `describe pod`.
 *
 * In standalone mode the manifest directory is the API: `apply` writes a manifest file there and
 * `delete` removes it; the file source picks the change up through inotify within milliseconds.
 */
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { Pod } from '@splitlet/api';
import type { StateDir, InstanceInfo } from '../state-dir.js';
import { CliError } from '../state-dir.js';
import { connectCli, findPod, listPods, podEvents } from '../node-view.js';
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
      throw new CliError(`error validating ${origin} (document ${i + 1}): metadata.name: Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`);
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
    let existed = false;
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

/** `delete pod NAME`: removes the pod's manifest (file or document); optionally waits until it is gone. */
export async function deletePod(
  s: StateDir,
  inst: InstanceInfo,
  name: string,
  namespace: string,
  opts: { wait: boolean; timeoutMs: number },
  out: NodeJS.WritableStream,
): Promise<void> {
  const matches = (p: Pod): boolean =>
    (p.metadata.namespace ?? 'default') === namespace && (p.metadata.name === name || `${p.metadata.name}-${inst.nodeName}` === name);
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
  out.write(`pod "${name}" deleted\n`);
  if (!opts.wait) return;
  const bus = await connectCli(inst);
  try {
    const deadline = Date.now() + opts.timeoutMs;
    for (;;) {
      const pods = await listPods(bus, inst.nodeName);
      if (!findPod(pods, name, namespace, inst.nodeName)) return;
      if (Date.now() > deadline) throw new CliError(`timed out waiting for pod "${name}" to be deleted`);
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await bus.close();
  }
}

/** `get pods [NAME] [-o wide|json|yaml]`. */
export async function getPods(
  inst: InstanceInfo,
  name: string | undefined,
  namespace: string | undefined,
  output: string | undefined,
  out: NodeJS.WritableStream,
): Promise<void> {
  const bus = await connectCli(inst);
  try {
    let pods = await listPods(bus, inst.nodeName);
    if (namespace !== undefined) pods = pods.filter((p) => p.pod.metadata.namespace === namespace);
    if (name !== undefined) {
      const p = findPod(pods, name, namespace ?? 'default', inst.nodeName);
      if (!p) throw new CliError(`Error from server (NotFound): pods "${name}" not found`);
      pods = [p];
    }
    const now = Date.now();
    const asObject = (v: (typeof pods)[number]): Pod => ({ ...v.pod, apiVersion: 'v1', kind: 'Pod' });
    switch (output) {
      case undefined:
      case 'wide':
        if (pods.length === 0) {
          out.write(`No resources found in ${namespace ?? 'any'} namespace.\n`);
          return;
        }
        out.write(podTable(pods.map((p) => podRow(p.pod, now, p.terminating)), output === 'wide'));
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
  } finally {
    await bus.close();
  }
}

/** `describe pod NAME`. */
export async function describe(inst: InstanceInfo, name: string, namespace: string, out: NodeJS.WritableStream): Promise<void> {
  const bus = await connectCli(inst);
  try {
    const pods = await listPods(bus, inst.nodeName);
    const p = findPod(pods, name, namespace, inst.nodeName);
    if (!p) throw new CliError(`Error from server (NotFound): pods "${name}" not found`);
    const uid = p.pod.metadata.uid;
    const events = uid ? await podEvents(bus, inst.nodeName, uid) : [];
    out.write(describePod(p.pod, events, Date.now(), p.terminating));
  } finally {
    await bus.close();
  }
}
