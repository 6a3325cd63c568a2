/**
 * The generic REST storage every resource goes through: create with system metadata and
 * `generateName`, get, list with selectors and pages, update and patch with optimistic concurrency,
 * graceful and finalizer-aware deletion, the pod binding, and watch.
 *
 * Models k8s.io/apiserver/pkg/registry/generic/registry/store.go (Store.Create, Update with
 * GuaranteedUpdate, Delete with BeforeDelete graceful handling and finalizers, List, Watch) and
 * pkg/registry/core/pod/storage (BindingREST, the pod's graceful deletion rules).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { ApiError, type StatusCause } from '../http/api-errors.js';
import { applyPatch } from '../http/patch.js';
import type { Logger } from '@splitlet/telemetry';
import { keyFilter, metaText, objectKey, type KubeObject, type ObjectStore, type StoreEvent, type Stored } from '../storage/object-store.js';
import type { WatchCache } from '../storage/watch-cache.js';
import { apiVersionOf, fieldValues, type ResourceDef } from './resources.js';
import { parseFieldSelector, parseLabelSelector, type Matcher } from './selectors.js';

/** Options of a list or watch. */
export interface ListOptions {
  readonly labelSelector: string | null;
  readonly fieldSelector: string | null;
  readonly limit?: number;
  readonly continueToken?: string | null;
}

/** `DeleteOptions` fields the storage honours. */
export interface DeleteOptions {
  readonly gracePeriodSeconds?: number;
  readonly preconditions?: { uid?: string; resourceVersion?: string };
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

function meta(o: KubeObject): Record<string, unknown> {
  o.metadata ??= {};
  return o.metadata;
}

function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function randomSuffix(): string {
  const bytes = randomBytes(5);
  return [...bytes].map((b) => GENERATE_ALPHABET[b % GENERATE_ALPHABET.length]).join('');
}

/** A read to try a write against: `cached` when it came from the watch cache and may be stale. */
interface Current {
  readonly stored: Stored;
  readonly cached: boolean;
}

/** Resources whose objects the watch caches hold: namespaces for every namespaced create, pods for their many updates. */
const CACHED_RESOURCES = ['namespaces', 'pods'];

/** The REST storage. `now` is injectable for tests. */
export class RestStorage {
  readonly #store: ObjectStore;
  readonly #now: () => number;
  readonly #caches = new Map<string, WatchCache>();

  constructor(store: ObjectStore, now: () => number = Date.now) {
    this.#store = store;
    this.#now = now;
  }

  /**
   * Keeps watch caches of namespaces and pods until `signal` aborts: namespace checks and the reads
   * before pod writes come from memory (a miss, or a stale object refused by its compare-and-swap,
   * falls back to a store read). Resolves when they are ready.
   */
  async startWatchCaches(signal: AbortSignal, logger?: Logger): Promise<void> {
    for (const resource of CACHED_RESOURCES) this.#caches.set(resource, this.#store.cache(resource, signal, logger));
    await Promise.all([...this.#caches.values()].map((c) => c.whenReady(signal)));
  }

  /** Whether a watch cache of `r` runs. */
  watchCaches(r: ResourceDef): boolean {
    return this.#caches.has(r.name);
  }

  /** Every object of `r` in the watch cache; undefined when it has none (or is relisting). Shared: not to be changed. */
  cachedObjects(r: ResourceDef): KubeObject[] | undefined {
    return this.#caches
      .get(r.name)
      ?.values()
      ?.map((s) => s.object);
  }

  /**
   * The object a write starts from: the watch cache's copy when `fresh` is false and it has one
   * (kube-apiserver's GuaranteedUpdate with `cachedExistingObject`), else a read (404 when gone).
   */
  async #current(r: ResourceDef, ns: string | undefined, name: string, fresh: boolean): Promise<Current> {
    const key = this.#key(r, ns, name);
    const cached = fresh ? undefined : this.#caches.get(r.name)?.get(key);
    if (cached !== undefined) return { stored: cached, cached: true };
    return { stored: await this.get(r, ns, name), cached: false };
  }

  get store(): ObjectStore {
    return this.#store;
  }

  #key(r: ResourceDef, ns: string | undefined, name: string): string {
    return objectKey(r.name, r.namespaced ? ns : undefined, name);
  }

  async #requireNamespace(r: ResourceDef, ns: string | undefined): Promise<void> {
    if (!r.namespaced) return;
    if (ns === undefined || ns === '') throw ApiError.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    const key = objectKey('namespaces', undefined, ns);
    // The cache knows every namespace this process wrote or read; one created elsewhere may not have arrived yet: read.
    if (this.#caches.get('namespaces')?.get(key) !== undefined) return;
    const nsObj = await this.#store.get(key);
    if (nsObj === undefined) throw ApiError.notFound('namespaces', ns);
  }

  /** The object, or 404. */
  async get(r: ResourceDef, ns: string | undefined, name: string): Promise<Stored> {
    const s = await this.#store.get(this.#key(r, ns, name));
    if (s === undefined) throw ApiError.notFound(r.name, name);
    return s;
  }

  /** Creates the object; fills uid, creationTimestamp, a generated name; defaults and validates. */
  async create(r: ResourceDef, ns: string | undefined, body: KubeObject, dryRun = false): Promise<Stored> {
    const o = structuredClone(body);
    const m = meta(o);
    const bodyNs = typeof m['namespace'] === 'string' && m['namespace'] !== '' ? m['namespace'] : undefined;
    if (r.namespaced && bodyNs !== undefined && ns !== undefined && bodyNs !== ns) {
      throw ApiError.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    const namespace = r.namespaced ? (ns ?? bodyNs) : undefined;
    await this.#requireNamespace(r, namespace);
    if ((m['name'] === undefined || m['name'] === '') && typeof m['generateName'] === 'string' && m['generateName'] !== '') m['name'] = `${m['generateName']}${randomSuffix()}`;
    const name = typeof m['name'] === 'string' ? m['name'] : '';
    const causes: StatusCause[] = [];
    if (name === '') causes.push({ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' });
    else if (!DNS_SUBDOMAIN.test(name) || name.length > 253) {
      causes.push({
        reason: 'FieldValueInvalid',
        field: 'metadata.name',
        message: `Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
      });
    }
    if (r.namespaced) m['namespace'] = namespace;
    else delete m['namespace'];
    m['uid'] = randomUUID();
    m['creationTimestamp'] = rfc3339(this.#now());
    delete m['resourceVersion'];
    delete m['deletionTimestamp'];
    delete m['deletionGracePeriodSeconds'];
    delete m['selfLink'];
    o['apiVersion'] = apiVersionOf(r);
    o['kind'] = r.kind;
    if (causes.length === 0) r.strategy.prepareForCreate?.(o);
    causes.push(...(causes.length === 0 ? (r.strategy.validate?.(o) ?? []) : []));
    if (causes.length > 0) throw ApiError.invalid(r.kind, name, causes);
    if (dryRun) return { key: this.#key(r, namespace, name), object: o, revision: 0 };
    return this.#store.create(this.#key(r, namespace, name), o, { resource: r.name, name });
  }

  /**
   * Replaces the object (or its status). A `metadata.resourceVersion` in the body is a precondition
   * (409 on mismatch); without one the update is unconditional. Identity fields are kept.
   * `read`: the object as the caller just read it (a patch), taken as the current one by the first
   * attempt instead of reading it again; the compare-and-swap on its revision still refuses a stale
   * one, and any refusal is the caller's to retry (its body came from that read).
   */
  async update(r: ResourceDef, ns: string | undefined, name: string, body: KubeObject, subresource = '', read?: Current): Promise<Stored> {
    const bodyRv = body.metadata?.['resourceVersion'];
    let fresh = false;
    for (let attempt = 0; ; attempt++) {
      const cur = attempt === 0 && read !== undefined ? read : await this.#current(r, ns, name, fresh);
      try {
        // A caller's read comes with a body made from it for this write (a patch's result): no copy needed.
        return await this.#updateFrom(r, name, body, subresource, cur.stored, read !== undefined);
      } catch (e) {
        if (!(e instanceof ApiError) || read !== undefined) throw e;
        // Refused against the watch cache's copy: only a fresh read's answer counts (GuaranteedUpdate's origStateIsCurrent).
        if (cur.cached) {
          fresh = true;
          continue;
        }
        // Unconditional updates retry a lost race, as GuaranteedUpdate does.
        if (attempt < 5 && (bodyRv === undefined || bodyRv === '') && e.reason === 'Conflict') continue;
        throw e;
      }
    }
  }

  /**
   * One attempt of {@link update} against `cur`: the preconditions, the strategy, the compare-and-swap
   * on its revision. `owned`: `body` is this write's own, changed in place rather than copied.
   */
  async #updateFrom(r: ResourceDef, name: string, body: KubeObject, subresource: string, cur: Stored, owned: boolean): Promise<Stored> {
    const bodyRv = body.metadata?.['resourceVersion'];
    if (typeof bodyRv === 'string' && bodyRv !== '' && bodyRv !== String(cur.revision)) {
      throw ApiError.conflict(r.name, name, 'the object has been modified; please apply your changes to the latest version and try again');
    }
    const bodyName = body.metadata?.['name'];
    if (typeof bodyName === 'string' && bodyName !== name) throw ApiError.badRequest(`the name of the object (${bodyName}) does not match the name on the URL (${name})`);
    const bodyUid = body.metadata?.['uid'];
    if (typeof bodyUid === 'string' && bodyUid !== '' && bodyUid !== cur.object.metadata?.['uid']) {
      throw ApiError.conflict(r.name, name, `Precondition failed: UID in precondition: ${bodyUid}, UID in object meta: ${String(cur.object.metadata?.['uid'])}`);
    }
    let next = owned ? body : structuredClone(body);
    const m = meta(next);
    const old = cur.object.metadata ?? {};
    for (const k of ['uid', 'creationTimestamp', 'namespace', 'name', 'deletionTimestamp', 'deletionGracePeriodSeconds']) {
      if (old[k] === undefined) delete m[k];
      else m[k] = old[k];
    }
    if (subresource === 'status') {
      // Only the status changes through the status subresource.
      if (r.strategy.prepareForUpdate !== undefined) next = r.strategy.prepareForUpdate(next, cur.object, 'status');
      else {
        const status = next['status'];
        next = structuredClone(cur.object);
        next['status'] = status;
      }
    } else if (r.strategy.prepareForUpdate !== undefined) {
      next = r.strategy.prepareForUpdate(next, cur.object, subresource);
    } else if (r.subresources.includes('status')) {
      next['status'] = cur.object['status'];
    }
    next['apiVersion'] = apiVersionOf(r);
    next['kind'] = r.kind;
    if (subresource === '' && r.strategy.validate !== undefined) {
      const causes = r.strategy.validate(next, cur.object);
      if (causes.length > 0) throw ApiError.invalid(r.kind, name, causes);
    }
    if (subresource === 'status' && r.strategy.validateStatusUpdate !== undefined) {
      const causes = r.strategy.validateStatusUpdate(next, cur.object);
      if (causes.length > 0) throw ApiError.invalid(r.kind, name, causes);
    }
    // A deleted object whose last finalizer went away is removed now.
    const nm = meta(next);
    const finalizers = (nm['finalizers'] as unknown[] | undefined) ?? [];
    if (nm['deletionTimestamp'] !== undefined && finalizers.length === 0 && (!r.graceful || nm['deletionGracePeriodSeconds'] === 0)) {
      return this.#store.delete(cur.key, next, cur.revision, { resource: r.name, name });
    }
    return this.#store.update(cur.key, next, cur.revision, { resource: r.name, name });
  }

  /**
   * Applies a patch and stores the result with a compare-and-swap on the revision it was read at.
   * The first attempt patches the watch cache's copy when there is one; whatever that attempt is
   * refused (a lost compare-and-swap, a precondition, validation) is tried again on a fresh read.
   */
  async patch(r: ResourceDef, ns: string | undefined, name: string, contentType: string, body: unknown, subresource = ''): Promise<Stored> {
    // The patch's own resourceVersion (if it set one) is a precondition; otherwise the read's.
    const patchedRv = typeof body === 'object' && body !== null && !Array.isArray(body) ? ((body as KubeObject).metadata?.['resourceVersion'] as string | undefined) : undefined;
    let fresh = false;
    for (let attempt = 0; ; attempt++) {
      const cur = await this.#current(r, ns, name, fresh);
      try {
        const patched = applyPatch(contentType, cur.stored.object as never, body) as KubeObject;
        if (typeof patched !== 'object' || patched === null || Array.isArray(patched)) throw ApiError.badRequest('the patch does not produce an object');
        meta(patched)['resourceVersion'] = patchedRv ?? String(cur.stored.revision);
        return await this.update(r, ns, name, patched, subresource, cur);
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        if (cur.cached) {
          fresh = true;
          continue;
        }
        if (attempt < 5 && patchedRv === undefined && e.reason === 'Conflict' && !/Precondition failed/.test(e.message)) continue;
        throw e;
      }
    }
  }

  /**
   * Deletes the object. Pods are deleted gracefully: with a grace period > 0 on a scheduled,
   * non-terminal pod the object only gets `deletionTimestamp` (the kubelet deletes it with grace 0
   * once its containers stopped). Objects with finalizers keep existing, marked, until the last one
   * is removed. Returns the object as it is after the call and whether it is gone.
   */
  async delete(r: ResourceDef, ns: string | undefined, name: string, opts: DeleteOptions): Promise<{ stored: Stored; gone: boolean }> {
    // The first attempt starts from the watch cache's copy; a refusal of it, or an answer without a write, is checked on a fresh read.
    let fresh = false;
    for (;;) {
      const { stored: cur, cached } = await this.#current(r, ns, name, fresh);
      fresh = true;
      const preconditionsHold =
        (opts.preconditions?.uid === undefined || opts.preconditions.uid === cur.object.metadata?.['uid']) &&
        (opts.preconditions?.resourceVersion === undefined || opts.preconditions.resourceVersion === String(cur.revision));
      if (cached && !preconditionsHold) continue;
      const m = cur.object.metadata ?? {};
      if (opts.preconditions?.uid !== undefined && opts.preconditions.uid !== m['uid']) {
        throw ApiError.conflict(r.name, name, `Precondition failed: UID in precondition: ${opts.preconditions.uid}, UID in object meta: ${String(m['uid'])}`);
      }
      if (opts.preconditions?.resourceVersion !== undefined && opts.preconditions.resourceVersion !== String(cur.revision)) {
        throw ApiError.conflict(
          r.name,
          name,
          `Precondition failed: ResourceVersion in precondition: ${opts.preconditions.resourceVersion}, ResourceVersion in object meta: ${cur.revision}`,
        );
      }
      const next = structuredClone(cur.object);
      const nm = meta(next);
      let grace = 0;
      if (r.graceful) {
        const spec = (next['spec'] as Record<string, unknown> | undefined) ?? {};
        const phase = (next['status'] as Record<string, unknown> | undefined)?.['phase'];
        grace = opts.gracePeriodSeconds ?? Number(spec['terminationGracePeriodSeconds'] ?? 30);
        if (spec['nodeName'] === undefined || spec['nodeName'] === '' || phase === 'Succeeded' || phase === 'Failed') grace = 0;
        const prevGrace = nm['deletionGracePeriodSeconds'];
        if (typeof prevGrace === 'number' && prevGrace < grace) grace = prevGrace;
      }
      const finalizers = (nm['finalizers'] as unknown[] | undefined) ?? [];
      if (grace > 0 || finalizers.length > 0) {
        const already = nm['deletionTimestamp'] !== undefined && nm['deletionGracePeriodSeconds'] === grace;
        if (!already) {
          nm['deletionTimestamp'] = rfc3339(this.#now() + grace * 1000);
          nm['deletionGracePeriodSeconds'] = grace;
        }
        if (already) {
          if (cached) continue;
          return { stored: cur, gone: false };
        }
        try {
          return { stored: await this.#store.update(cur.key, next, cur.revision, { resource: r.name, name }), gone: false };
        } catch (e) {
          if (e instanceof ApiError && e.reason === 'Conflict') continue;
          throw e;
        }
      }
      try {
        return { stored: await this.#store.delete(cur.key, next, cur.revision, { resource: r.name, name }), gone: true };
      } catch (e) {
        if (e instanceof ApiError && e.reason === 'Conflict') continue;
        throw e;
      }
    }
  }

  /** `pods/binding`: assigns the pod to a node; 409 when it already has one. */
  async bind(r: ResourceDef, ns: string, name: string, body: KubeObject): Promise<void> {
    const target = (body['target'] as { name?: string; kind?: string } | undefined) ?? {};
    if (target.name === undefined || target.name === '')
      throw ApiError.invalid('Binding', name, [{ reason: 'FieldValueRequired', field: 'target.name', message: 'target.name: Required value' }]);
    // The first attempt starts from the watch cache's copy; a refusal of it is checked on a fresh read.
    let fresh = false;
    for (;;) {
      const { stored: cur, cached } = await this.#current(r, ns, name, fresh);
      fresh = true;
      const spec = (cur.object['spec'] as Record<string, unknown> | undefined) ?? {};
      if (cached && (cur.object.metadata?.['deletionTimestamp'] !== undefined || (typeof spec['nodeName'] === 'string' && spec['nodeName'] !== ''))) continue;
      if (cur.object.metadata?.['deletionTimestamp'] !== undefined) throw ApiError.conflict('pods', name, 'pod is being deleted, cannot be assigned to a host');
      if (typeof spec['nodeName'] === 'string' && spec['nodeName'] !== '') throw ApiError.conflict('pods', name, `pod ${name} is already assigned to node "${spec['nodeName']}"`);
      const next = structuredClone(cur.object);
      next['spec'] = { ...spec, nodeName: target.name };
      try {
        await this.#store.update(cur.key, next, cur.revision, { resource: r.name, name });
        return;
      } catch (e) {
        if (e instanceof ApiError && e.reason === 'Conflict') continue;
        throw e;
      }
    }
  }

  #matcher(r: ResourceDef, opts: ListOptions): (o: KubeObject) => boolean {
    const labels: Matcher = parseLabelSelector(opts.labelSelector);
    const fields: Matcher = parseFieldSelector(opts.fieldSelector, r.fieldSelectors);
    return (o) => labels((o.metadata?.['labels'] as Record<string, string> | undefined) ?? {}) && fields(fieldValues(r, o));
  }

  /** Lists matching objects; `limit`/`continue` page by key. */
  async list(r: ResourceDef, ns: string | undefined, opts: ListOptions): Promise<{ items: KubeObject[]; revision: number; continueToken?: string; remaining?: number }> {
    const match = this.#matcher(r, opts);
    let after = '';
    let revision: number | undefined;
    if (opts.continueToken !== undefined && opts.continueToken !== null && opts.continueToken !== '') {
      try {
        const t = JSON.parse(Buffer.from(opts.continueToken, 'base64url').toString('utf8')) as { rv: number; start: string };
        after = t.start;
        revision = t.rv;
      } catch {
        throw ApiError.badRequest('continue key is not valid: illegal base64 data');
      }
    }
    const listed = await this.#store.list(keyFilter(r.name, r.namespaced ? ns : undefined));
    const items = listed.items.filter((s) => s.key > after && match(s.object));
    const rv = revision ?? listed.revision;
    if (opts.limit !== undefined && opts.limit > 0 && items.length > opts.limit) {
      const page = items.slice(0, opts.limit);
      const last = page[page.length - 1] as Stored;
      const token = Buffer.from(JSON.stringify({ rv, start: last.key })).toString('base64url');
      return { items: page.map((s) => s.object), revision: rv, continueToken: token, remaining: items.length - opts.limit };
    }
    return { items: items.map((s) => s.object), revision: rv };
  }

  /**
   * Watch events after `fromRevision` that match the selectors. An object that starts matching is
   * ADDED, one that stops matching is DELETED, as the watch cache reports them. Served by the
   * resource's watch cache when it has one that holds `fromRevision`, else by a store watch.
   */
  async *watch(
    r: ResourceDef,
    ns: string | undefined,
    opts: ListOptions,
    fromRevision: number,
    initiallyMatching: ReadonlySet<string>,
    signal: AbortSignal,
  ): AsyncGenerator<StoreEvent> {
    const match = this.#matcher(r, opts);
    const seen = new Set(initiallyMatching);
    const filter = keyFilter(r.name, r.namespaced ? ns : undefined);
    // From the watch cache when it holds the revision (no store watch of its own), else from the store.
    const events = this.#caches.get(r.name)?.watch(filter, fromRevision, signal) ?? this.#store.watch(filter, fromRevision, signal);
    for await (const e of events) {
      const uidKey = metaText(e.object, 'namespace') + '/' + metaText(e.object, 'name');
      const matches = match(e.object);
      if (e.type === 'DELETED') {
        if (seen.delete(uidKey) || matches) yield e;
        continue;
      }
      if (matches) {
        const type = seen.has(uidKey) ? (e.type === 'ADDED' ? 'ADDED' : 'MODIFIED') : 'ADDED';
        seen.add(uidKey);
        yield { ...e, type };
      } else if (seen.delete(uidKey)) {
        yield { ...e, type: 'DELETED' };
      }
    }
  }
}
