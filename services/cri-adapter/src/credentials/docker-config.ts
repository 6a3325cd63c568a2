/**
 * Docker config files as the kubelet reads them: `config.json` (`{"auths": {<registry>: <entry>}}`)
 * and the legacy `.dockercfg` (`{<registry>: <entry>}`), where an entry holds `username`/`password`
 * or `auth` = base64(`user:password`), plus `email`, and (docker CLI) `identitytoken` /
 * `registrytoken`.
 *
 * Models pkg/credentialprovider/config.go (DockerConfigJSON, DockerConfigEntry.UnmarshalJSON,
 * decodeDockerConfigFieldAuth, readDockerConfigFileFromBytes, readDockerConfigJSONFileFromBytes).
 * Unlike the kubelet, no error text ever quotes the file's contents (the kubelet logs the whole blob
 * on a parse error): the contents are credentials.
 */
import { CredentialError } from './credential-error.js';

/** One registry's credentials, `auth` decoded into username and password. */
export interface DockerConfigEntry {
  readonly username: string;
  readonly password: string;
  readonly email: string;
  /** docker CLI `identitytoken` (an OAuth refresh token); '' when absent. */
  readonly identityToken: string;
  /** docker CLI `registrytoken` (a bearer token); '' when absent. */
  readonly registryToken: string;
}

/** Registry key (as written in the file, e.g. `https://index.docker.io/v1/`) → entry, in file order. */
export type DockerConfig = ReadonlyMap<string, DockerConfigEntry>;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** JSON.parse without its error text: Node quotes part of the input in it, and the input is secret. */
function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new CredentialError('InvalidDockerConfig', `${what} is not valid JSON`);
  }
}

const STD_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const RAW_BASE64 = /^[A-Za-z0-9+/]*$/;

/**
 * Decodes an `auth` field, base64(`<username>:<password>`): padded (standard encoding) when its
 * length is a multiple of 4, else unpadded, strictly as Go's decoders do. Splits at the first `:`.
 *
 * Models decodeDockerConfigFieldAuth.
 */
export function decodeDockerConfigFieldAuth(field: string, registry: string): { username: string; password: string } {
  const padded = field.length % 4 === 0;
  const valid = padded ? STD_BASE64.test(field) : RAW_BASE64.test(field) && field.length % 4 !== 1;
  if (!valid) throw new CredentialError('InvalidDockerConfig', `the auth field of ${JSON.stringify(registry)} is not valid base64`);
  const decoded = Buffer.from(field, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new CredentialError('InvalidDockerConfig', `unable to parse auth field of ${JSON.stringify(registry)}: no "user:password"`);
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** The entry's string field `name`, matched case-insensitively as Go's encoding/json does. */
function stringField(entry: Record<string, unknown>, name: string, registry: string): string {
  let value: unknown;
  for (const [k, v] of Object.entries(entry)) if (k.toLowerCase() === name) value = v;
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new CredentialError('InvalidDockerConfig', `the ${name} field of ${JSON.stringify(registry)} must be a string`);
  return value;
}

/** One entry: `auth`, when present, replaces username and password (DockerConfigEntry.UnmarshalJSON). */
function readEntry(registry: string, raw: unknown): DockerConfigEntry {
  if (!isPlainObject(raw)) throw new CredentialError('InvalidDockerConfig', `the entry of ${JSON.stringify(registry)} must be an object`);
  let username = stringField(raw, 'username', registry);
  let password = stringField(raw, 'password', registry);
  const auth = stringField(raw, 'auth', registry);
  if (auth !== '') ({ username, password } = decodeDockerConfigFieldAuth(auth, registry));
  return {
    username,
    password,
    email: stringField(raw, 'email', registry),
    identityToken: stringField(raw, 'identitytoken', registry),
    registryToken: stringField(raw, 'registrytoken', registry),
  };
}

function readEntries(raw: unknown, what: string): DockerConfig {
  if (raw === null || raw === undefined) return new Map();
  if (!isPlainObject(raw)) throw new CredentialError('InvalidDockerConfig', `${what} must be an object of registries`);
  return new Map(Object.entries(raw).map(([registry, entry]) => [registry, readEntry(registry, entry)]));
}

/**
 * Parses a legacy `.dockercfg` (also the `.dockercfg` key of a `kubernetes.io/dockercfg` secret).
 * Throws {@link CredentialError} `InvalidDockerConfig` naming the problem, never the contents.
 *
 * Models readDockerConfigFileFromBytes.
 */
export function readDockercfg(text: string, what = '.dockercfg'): DockerConfig {
  return readEntries(parseJson(text, what), what);
}

/**
 * Parses a `config.json` (also the `.dockerconfigjson` key of a `kubernetes.io/dockerconfigjson`
 * secret): its `auths`; other keys (`HttpHeaders`, `credsStore`, …) are ignored.
 * Throws {@link CredentialError} `InvalidDockerConfig` naming the problem, never the contents.
 *
 * Models readDockerConfigJSONFileFromBytes.
 */
export function readDockerConfigJson(text: string, what = 'config.json'): DockerConfig {
  const raw = parseJson(text, what);
  if (!isPlainObject(raw)) throw new CredentialError('InvalidDockerConfig', `${what} must be an object`);
  let auths: unknown;
  for (const [k, v] of Object.entries(raw)) if (k.toLowerCase() === 'auths') auths = v;
  return readEntries(auths, `the auths of ${what}`);
}
