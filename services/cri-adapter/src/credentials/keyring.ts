/**
 * The docker keyring: registry credentials indexed by registry key (a host, optionally with a port
 * and a path; the host may have glob parts such as `*.example.com`), looked up by image repository.
 *
 * Models pkg/credentialprovider/keyring.go (BasicDockerKeyring.Add / Lookup, UnionDockerKeyring,
 * URLsMatch, SplitURL, ParseSchemelessURL, isDefaultRegistryMatch).
 */
import type { DockerConfig } from './docker-config.js';

/** One set of credentials for a pull (the CRI AuthConfig fields), with where it came from. */
export interface TrackedAuthConfig {
  readonly username: string;
  readonly password: string;
  readonly email: string;
  readonly identityToken: string;
  readonly registryToken: string;
  /** Where the credentials came from, for logs (e.g. `secret default/regcred`, `file /var/lib/kubelet/config.json`). Never a credential. */
  readonly source: string;
}

/** Credentials by image. */
export interface DockerKeyring {
  /**
   * Every credential whose registry key matches the image repository (`registry.example.com/team/app`,
   * no tag), most specific key first; [] when none match (the pull is anonymous).
   */
  lookup(image: string): TrackedAuthConfig[];
}

/** A schemeless URL split as Go's url.Parse splits `https://<url>`: authority host and path. */
export interface SchemelessUrl {
  readonly host: string;
  readonly path: string;
}

/**
 * Parses a URL without scheme (`registry.example.com:5000/team`) into host and path; undefined for
 * one Go's url.Parse rejects (control characters or spaces, a bad port, a bad `%` escape).
 *
 * Models ParseSchemelessURL.
 */
export function parseSchemelessUrl(url: string): SchemelessUrl | undefined {
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f]/.test(url)) return undefined;
  let rest = url;
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  const query = rest.indexOf('?');
  if (query >= 0) rest = rest.slice(0, query);
  const slash = rest.indexOf('/');
  let host = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? '' : rest.slice(slash);
  const at = host.lastIndexOf('@');
  if (at >= 0) host = host.slice(at + 1);
  // A port, when present, must be digits (Go: "invalid port").
  const portMatch = /^(?:\[[^\]]*\]|[^:]*):(.*)$/.exec(host);
  if (portMatch !== null && !/^[0-9]*$/.test(portMatch[1] ?? '')) return undefined;
  try {
    return { host: decodeURIComponent(host), path: decodeURIComponent(path) };
  } catch {
    return undefined;
  }
}

/**
 * Go's net.SplitHostPort, returning undefined where it errors (no port, too many colons).
 */
function splitHostPort(hostport: string): { host: string; port: string } | undefined {
  if (hostport.startsWith('[')) {
    const end = hostport.indexOf(']');
    if (end < 0 || hostport[end + 1] !== ':') return undefined;
    const port = hostport.slice(end + 2);
    return port.includes(':') ? undefined : { host: hostport.slice(1, end), port };
  }
  const i = hostport.lastIndexOf(':');
  if (i < 0) return undefined;
  const host = hostport.slice(0, i);
  return host.includes(':') ? undefined : { host, port: hostport.slice(i + 1) };
}

/**
 * The host's dot-separated parts and its port ('' when it has none).
 *
 * Models SplitURL.
 */
export function splitUrl(url: SchemelessUrl): { parts: string[]; port: string } {
  const hp = splitHostPort(url.host) ?? { host: url.host, port: '' };
  return { parts: hp.host.split('.'), port: hp.port };
}

/**
 * Go's path/filepath.Match for one host part (no `/` in it): `*` any run of characters, `?` one,
 * `[…]` a class (`^` negates, `a-z` ranges), `\` escapes. Undefined for a malformed pattern.
 */
function globToRegExp(pattern: string): RegExp | undefined {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] ?? '';
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '\\') {
      i++;
      if (i >= pattern.length) return undefined;
      out += escapeRegExp(pattern[i] ?? '');
    } else if (c === '[') {
      let j = i + 1;
      let cls = '';
      if (pattern[j] === '^') {
        cls += '^';
        j++;
      }
      let first = true;
      for (; j < pattern.length && (first || pattern[j] !== ']'); j++) {
        first = false;
        let ch = pattern[j] ?? '';
        if (ch === '\\') {
          j++;
          if (j >= pattern.length) return undefined;
          ch = pattern[j] ?? '';
        }
        if (ch === '-' && cls !== '' && cls !== '^' && pattern[j + 1] !== ']') cls += '-';
        else cls += escapeRegExp(ch);
      }
      if (j >= pattern.length || cls === '' || cls === '^') return undefined;
      out += `[${cls}]`;
      i = j;
    } else out += escapeRegExp(c);
  }
  try {
    return new RegExp(`^${out}$`, 's');
  } catch {
    return undefined;
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/**
 * Whether the target URL matches the glob URL: same port, same number of host parts, each host part
 * matching its glob (`*.example.com` matches `a.example.com`, not `example.com` nor `a.b.example.com`),
 * and the glob's path a string prefix of the target's. No wildcards in ports or paths.
 *
 * Models URLsMatch / URLsMatchStr.
 */
export function urlsMatch(glob: string, target: string): boolean {
  const g = parseSchemelessUrl(glob);
  const t = parseSchemelessUrl(target);
  if (g === undefined || t === undefined) return false;
  const gs = splitUrl(g);
  const ts = splitUrl(t);
  if (gs.port !== ts.port) return false;
  if (gs.parts.length !== ts.parts.length) return false;
  if (!t.path.startsWith(g.path)) return false;
  return gs.parts.every((part, i) => globToRegExp(part)?.test(ts.parts[i] ?? '') === true);
}

/** The registry key Docker Hub credentials are stored under (`https://index.docker.io/v1/` normalizes to it). */
export const DEFAULT_REGISTRY_HOST = 'index.docker.io';

/**
 * Whether an image is pulled from Docker Hub: no registry part (`busybox`, `library/busybox`), or
 * `docker.io/…` / `index.docker.io/…`, or a first part without `.` or `:`.
 *
 * Models isDefaultRegistryMatch.
 */
export function isDefaultRegistryMatch(image: string): boolean {
  const slash = image.indexOf('/');
  const first = slash < 0 ? image : image.slice(0, slash);
  if (first === '') return false;
  if (slash < 0) return true;
  if (first === 'docker.io' || first === 'index.docker.io') return true;
  return !/[.:]/.test(first);
}

/**
 * The index key of a registry entry: scheme stripped, host plus path, where a `/v1/` or `/v2/` path
 * prefix counts as the host alone (`https://index.docker.io/v1/` → `index.docker.io`). Undefined for
 * an entry the URL parser rejects.
 */
export function registryKey(location: string): string | undefined {
  const schemeless = location.startsWith('https://') ? location.slice(8) : location.startsWith('http://') ? location.slice(7) : location;
  // Go parses "https://" + location; a location with another scheme ends up as a host with a colon and fails there.
  const parsed = parseSchemelessUrl(schemeless);
  if (parsed === undefined) return undefined;
  let effectivePath = parsed.path;
  if (effectivePath.startsWith('/v2/') || effectivePath.startsWith('/v1/')) effectivePath = effectivePath.slice(3);
  return effectivePath !== '' && effectivePath !== '/' ? parsed.host + effectivePath : parsed.host;
}

/**
 * A keyring built from docker configs. `add` may be called several times (all pull secrets of a pod
 * go into one keyring); the index stays deduplicated and reverse-sorted, so longer (more specific)
 * keys come before their prefixes: `quay.io/team` before `quay.io`.
 *
 * Models BasicDockerKeyring.
 */
export class BasicDockerKeyring implements DockerKeyring {
  #index: string[] = [];
  readonly #creds = new Map<string, TrackedAuthConfig[]>();
  readonly #invalid: string[] = [];

  /**
   * Adds every entry of `config` with its source. Entries whose registry key does not parse are
   * skipped and remembered in {@link invalidEntries} (the kubelet logs and ignores them).
   */
  add(config: DockerConfig, source: string): void {
    for (const [location, entry] of config) {
      const key = registryKey(location);
      if (key === undefined) {
        this.#invalid.push(location);
        continue;
      }
      const list = this.#creds.get(key) ?? [];
      list.push({
        username: entry.username,
        password: entry.password,
        email: entry.email,
        identityToken: entry.identityToken,
        registryToken: entry.registryToken,
        source,
      });
      this.#creds.set(key, list);
    }
    // Go's sort.Reverse(sort.StringSlice): byte order, descending.
    this.#index = [...this.#creds.keys()].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  }

  /** Registry keys that were skipped because they do not parse (they are not secret). */
  get invalidEntries(): readonly string[] {
    return this.#invalid;
  }

  /** True when no credentials were added. */
  get empty(): boolean {
    return this.#creds.size === 0;
  }

  lookup(image: string): TrackedAuthConfig[] {
    const out: TrackedAuthConfig[] = [];
    for (const key of this.#index) if (urlsMatch(key, image)) out.push(...(this.#creds.get(key) ?? []));
    if (out.length > 0) return out;
    if (isDefaultRegistryMatch(image)) return [...(this.#creds.get(DEFAULT_REGISTRY_HOST) ?? [])];
    return [];
  }
}

/**
 * The credentials of every keyring, in keyring order (pod pull secrets before the node's config).
 *
 * Models UnionDockerKeyring.
 */
export function unionDockerKeyring(keyrings: readonly DockerKeyring[]): DockerKeyring {
  return { lookup: (image) => keyrings.flatMap((k) => k.lookup(image)) };
}
