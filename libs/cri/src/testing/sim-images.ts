/**
 * The simulator's image store: docker-style reference normalization, deterministic ids and digests,
 * a "missing image" rule, pulls and removals.
 */
import { createHash } from 'node:crypto';
import { CriError } from '../cri-error.js';
import type { Image } from '../types.js';

/** A reference split into parts, normalized as containerd does (`busybox` → `docker.io/library/busybox:latest`). */
export interface ImageReference {
  /** `docker.io/library/busybox` */
  repository: string;
  /** The repository without its registry, e.g. `library/busybox`. */
  path: string;
  tag: string | undefined;
  digest: string | undefined;
  /** `docker.io/library/busybox:latest` (or `…@sha256:…`). */
  normalized: string;
}

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;

/** Parses and normalizes an image reference. Throws CriError `InvalidArgument` for an invalid one. */
export function normalizeImageRef(ref: string): ImageReference {
  const invalid = (): never => {
    throw new CriError('InvalidArgument', `failed to parse image reference "${ref}": invalid reference format`);
  };
  if (ref === '' || ref.trim() !== ref) invalid();
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) invalid();
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!/^[\w][\w.-]{0,127}$/.test(tag)) invalid();
  }
  const slash = rest.indexOf('/');
  const first = slash < 0 ? '' : rest.slice(0, slash);
  let domain = 'docker.io';
  let path = rest;
  if (slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    domain = first;
    path = rest.slice(slash + 1);
  }
  if (domain === 'docker.io' && !path.includes('/')) path = `library/${path}`;
  if (!path.split('/').every((c) => COMPONENT.test(c))) invalid();
  if (tag === undefined && digest === undefined) tag = 'latest';
  const repository = `${domain}/${path}`;
  const normalized = `${repository}${tag !== undefined ? `:${tag}` : ''}${digest !== undefined ? `@${digest}` : ''}`;
  return { repository, path, tag, digest, normalized };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The default missing-image rule: the repository path or the tag contains `doesnotexist` or `missing`. */
export function defaultIsMissingImage(ref: ImageReference): boolean {
  return /doesnotexist|missing/.test(ref.path) || /doesnotexist|missing/.test(ref.tag ?? '');
}

interface ImageRecord {
  id: string;
  repoTags: Set<string>;
  repoDigests: Set<string>;
  size: number;
}

/**
 * What PullImage reaches: `open`, a registry that has every image except the missing ones; or
 * `unreachable`, none at all (the project's own containerd, started without registry access: every
 * pull fails, even of an image that is present).
 */
export type SimRegistry = 'open' | 'unreachable';

/** Options of {@link SimImageStore}. */
export interface SimImageStoreOptions {
  /** Images present from the start, or `'all'`: every reference is present unless missing. */
  images: readonly string[] | 'all';
  isMissing: (ref: ImageReference) => boolean;
  /** @default 'open' */
  registry?: SimRegistry;
}

/** The registry host and the `/v2/…/manifests/…` URL containerd requests for a reference. */
function manifestUrl(ref: ImageReference): { host: string; url: string } {
  const host = ref.repository.slice(0, ref.repository.length - ref.path.length - 1);
  const apiHost = host === 'docker.io' ? 'registry-1.docker.io' : host;
  const loopback = /^(localhost|127\.[0-9.]+)(:\d+)?$/.test(host);
  return { host, url: `${loopback ? 'http' : 'https'}://${apiHost}/v2/${ref.path}/manifests/${ref.digest ?? ref.tag ?? 'latest'}` };
}

/**
 * containerd 1.6's PullImage error when no registry can be reached: `splitlet runtime` points its
 * proxy at a closed loopback port, so remote registries fail with `proxyconnect`, loopback ones
 * (not proxied) with a plain connection refusal (measured, containerd 1.6.20).
 */
export function unreachableRegistryError(ref: ImageReference): CriError {
  const { host, url } = manifestUrl(ref);
  const loopback = url.startsWith('http:');
  const port = /:(\d+)$/.exec(host)?.[1] ?? '80';
  const dial = loopback ? `dial tcp 127.0.0.1:${port}: connect: connection refused` : 'proxyconnect tcp: dial tcp 127.0.0.1:1: connect: connection refused';
  return new CriError(
    'Unknown',
    `failed to pull and unpack image "${ref.normalized}": failed to resolve reference "${ref.normalized}": failed to do request: Head "${url}": ${dial}`,
  );
}

/** In-memory images. Synchronous; the runtime adds latency and failures around it. */
export class SimImageStore {
  readonly #byId = new Map<string, ImageRecord>();
  readonly #removed = new Set<string>();
  readonly #all: boolean;
  readonly #isMissing: (ref: ImageReference) => boolean;
  readonly #registry: SimRegistry;

  constructor(options: SimImageStoreOptions) {
    this.#all = options.images === 'all';
    this.#isMissing = options.isMissing;
    this.#registry = options.registry ?? 'open';
    if (options.images !== 'all') for (const ref of options.images) this.#materialize(normalizeImageRef(ref));
  }

  #materialize(ref: ImageReference): ImageRecord {
    const id = `sha256:${sha256(`image:${ref.repository}:${ref.tag ?? ref.digest ?? ''}`)}`;
    let rec = this.#byId.get(id);
    if (rec === undefined) {
      const manifest = ref.digest ?? `sha256:${sha256(`manifest:${ref.normalized}`)}`;
      rec = {
        id,
        repoTags: new Set(),
        repoDigests: new Set([`${ref.repository}@${manifest}`]),
        size: 1_000_000 + (parseInt(id.slice(7, 15), 16) % 4_000_000),
      };
      this.#byId.set(id, rec);
    }
    if (ref.tag !== undefined) rec.repoTags.add(`${ref.repository}:${ref.tag}`);
    this.#removed.delete(ref.normalized);
    return rec;
  }

  #lookup(image: string): ImageRecord | undefined {
    const idMatch = /^(?:sha256:)?([0-9a-f]{64})$/.exec(image);
    if (idMatch !== null) return this.#byId.get(`sha256:${idMatch[1]}`);
    const ref = normalizeImageRef(image);
    for (const rec of this.#byId.values()) {
      if (rec.repoTags.has(ref.normalized) || rec.repoDigests.has(ref.normalized)) return rec;
    }
    if (this.#all && !this.#removed.has(ref.normalized) && !this.#isMissing(ref)) return this.#materialize(ref);
    return undefined;
  }

  /** The image for a reference or id, as CRI reports it; undefined when absent. */
  status(image: string): Image | undefined {
    const rec = this.#lookup(image);
    return rec === undefined ? undefined : toImage(rec);
  }

  /**
   * Pulls an image: present afterwards, unless it is missing (CriError `NotFound`, containerd's
   * text) or the registry is unreachable (CriError `Unknown`, see {@link unreachableRegistryError}).
   * Returns the id.
   */
  pull(image: string): string {
    const ref = normalizeImageRef(image);
    if (this.#registry === 'unreachable') throw unreachableRegistryError(ref);
    if (this.#isMissing(ref)) {
      throw new CriError(
        'NotFound',
        `failed to pull and unpack image "${ref.normalized}": failed to resolve reference "${ref.normalized}": ${ref.normalized}: not found`,
      );
    }
    return this.#materialize(ref).id;
  }

  /** Removes an image (by reference or id); an absent one is fine. */
  remove(image: string): void {
    const rec = this.#lookup(image);
    if (rec === undefined) return;
    this.#byId.delete(rec.id);
    for (const tag of rec.repoTags) this.#removed.add(tag);
  }

  /** Every image in the store (in `'all'` mode: those looked up, pulled or preloaded so far). */
  list(): Image[] {
    return [...this.#byId.values()].map(toImage);
  }
}

function toImage(rec: ImageRecord): Image {
  const repoTags = [...rec.repoTags];
  return {
    id: rec.id,
    repoTags,
    repoDigests: [...rec.repoDigests],
    size: String(rec.size),
    uid: null,
    username: '',
    spec: null,
    pinned: repoTags.some((t) => /\/pause:/.test(t)),
  };
}
