/**
 * normalizeImageRef(): an image reference split and normalized the way containerd stores it
 * (`busybox` → `docker.io/library/busybox:latest`), for runtime implementations (the simulator, the
 * fake in `./testing`).
 */
import { CriError } from './cri-error.js';

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
