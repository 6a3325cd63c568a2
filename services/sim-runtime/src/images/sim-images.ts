/**
 * The simulator's image store: docker-style reference normalization, deterministic ids and digests,
 * a "missing image" rule, pulls and removals.
 */
import { createHash } from 'node:crypto';
import { CriError, normalizeImageRef, type AuthConfig, type CriInput, type Image, type ImageReference } from '@splitlet/cri';

/**
 * An image's size, derived from its name: about what the real image weighs for a few well-known
 * ones, else 2–100 MB by a hash of the repository.
 */
export function imageSize(ref: ImageReference): number {
  const known: Readonly<Record<string, number>> = { 'library/busybox': 4_261_550, pause: 311_278, 'library/nginx': 72_099_410, 'library/redis': 45_118_976 };
  return known[ref.path] ?? 2_000_000 + (parseInt(sha256(`size:${ref.repository}`).slice(0, 8), 16) % 98_000_000);
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

/**
 * A registry (or a part of one) that answers 401 without the right HTTP Basic credentials, the way
 * a registry with htpasswd auth does: images whose registry host is `host` and whose repository path
 * starts with `pathPrefix` need `username`/`password`.
 */
export interface SimPrivateRegistry {
  /** The registry host as references name it, e.g. `127.0.0.1:5000` or `docker.io`. */
  readonly host: string;
  /** Only repositories under this path, e.g. `private/`. @default every repository of the host */
  readonly pathPrefix?: string;
  readonly username: string;
  readonly password: string;
}

/** Options of {@link SimImageStore}. */
export interface SimImageStoreOptions {
  /** Images present from the start, or `'all'`: every reference is present unless missing. */
  images: readonly string[] | 'all';
  isMissing: (ref: ImageReference) => boolean;
  /** @default 'open' */
  registry?: SimRegistry;
  /** Registries that need credentials (only reached when `registry` is `open`). @default none */
  privateRegistries?: readonly SimPrivateRegistry[];
}

/**
 * The user name and password containerd's CRI plugin sends for a pull's `auth`, for requests to
 * `host`: none when `serverAddress` names another host; else `username`/`password`, or the identity
 * token as the password, or the decoded `auth` (`base64(user:password)`). The registry token is not
 * supported by containerd 1.6 (anonymous).
 *
 * Models containerd 1.6 pkg/cri/server/image_pull.go ParseAuth.
 */
export function credentialsForHost(auth: CriInput<AuthConfig> | null | undefined, host: string): { username: string; password: string } {
  const none = { username: '', password: '' };
  if (auth === undefined || auth === null) return none;
  const serverAddress = auth.serverAddress ?? '';
  if (serverAddress !== '') {
    // Go's url.Parse: only an address with a scheme has a host; a bare `host:port` never matches.
    let serverHost = '';
    if (serverAddress.includes('://')) {
      try {
        serverHost = new URL(serverAddress).host;
      } catch {
        throw new CriError('Unknown', `failed to pull and unpack image: parse server address: invalid URL`);
      }
    }
    if (serverHost !== host) return none;
  }
  if ((auth.username ?? '') !== '') return { username: auth.username ?? '', password: auth.password ?? '' };
  if ((auth.identityToken ?? '') !== '') return { username: '', password: auth.identityToken ?? '' };
  if ((auth.auth ?? '') !== '') {
    const decoded = Buffer.from(auth.auth ?? '', 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new CriError('Unknown', 'failed to pull and unpack image: invalid decoded auth');
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1).replace(/\0+$/, '') };
  }
  return none;
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

/**
 * containerd 1.6's PullImage error when the registry answers 401 to the manifest request, with or
 * without (wrong) credentials: gRPC Unknown, `… pulling from host <host> failed with status code
 * [manifests <tag|digest>]: 401 Unauthorized` (measured, containerd 1.6.20 against a registry with
 * Basic auth).
 */
export function unauthorizedRegistryError(ref: ImageReference): CriError {
  const { url } = manifestUrl(ref);
  const apiHost = new URL(url).host;
  return new CriError(
    'Unknown',
    `failed to pull and unpack image "${ref.normalized}": failed to resolve reference "${ref.normalized}": pulling from host ${apiHost} failed with status code [manifests ${ref.digest ?? ref.tag ?? 'latest'}]: 401 Unauthorized`,
  );
}

/** In-memory images. Synchronous; the runtime adds latency and failures around it. */
export class SimImageStore {
  readonly #byId = new Map<string, ImageRecord>();
  readonly #removed = new Set<string>();
  readonly #all: boolean;
  readonly #isMissing: (ref: ImageReference) => boolean;
  readonly #registry: SimRegistry;
  readonly #private: readonly SimPrivateRegistry[];

  constructor(options: SimImageStoreOptions) {
    this.#all = options.images === 'all';
    this.#isMissing = options.isMissing;
    this.#registry = options.registry ?? 'open';
    this.#private = options.privateRegistries ?? [];
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
        size: imageSize(ref),
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

  /**
   * How long pulling `image` takes at `bytesPerSecond`: 50 ms to resolve the manifest, plus the
   * transfer of its layers when the image is not present yet (a pull that fails fails in 50 ms).
   */
  pullTimeMs(image: string, bytesPerSecond: number): number {
    const resolve = 50;
    if (this.#registry === 'unreachable') return 0;
    let ref: ImageReference;
    try {
      ref = normalizeImageRef(image);
    } catch {
      return 0;
    }
    const present = [...this.#byId.values()].some((r) => r.repoTags.has(ref.normalized) || r.repoDigests.has(ref.normalized));
    if (present || this.#isMissing(ref)) return resolve;
    return resolve + Math.round((imageSize(ref) / bytesPerSecond) * 1000);
  }

  /** The image for a reference or id, as CRI reports it; undefined when absent. */
  status(image: string): Image | undefined {
    const rec = this.#lookup(image);
    return rec === undefined ? undefined : toImage(rec);
  }

  /**
   * Pulls an image: present afterwards, unless the registry is unreachable (CriError `Unknown`, see
   * {@link unreachableRegistryError}), is private and `auth` does not hold its credentials (CriError
   * `Unknown`, see {@link unauthorizedRegistryError}), or the image is missing (CriError `NotFound`,
   * containerd's text). Returns the id.
   */
  pull(image: string, auth?: CriInput<AuthConfig> | null): string {
    const ref = normalizeImageRef(image);
    if (this.#registry === 'unreachable') throw unreachableRegistryError(ref);
    const host = ref.repository.slice(0, ref.repository.length - ref.path.length - 1);
    const guard = this.#private.find((p) => p.host === host && ref.path.startsWith(p.pathPrefix ?? ''));
    if (guard !== undefined) {
      const { username, password } = credentialsForHost(auth, new URL(manifestUrl(ref).url).host);
      if (username !== guard.username || password !== guard.password) throw unauthorizedRegistryError(ref);
    }
    if (this.#isMissing(ref)) {
      throw new CriError('NotFound', `failed to pull and unpack image "${ref.normalized}": failed to resolve reference "${ref.normalized}": ${ref.normalized}: not found`);
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
