/**
 * Image references the way the kubelet reads them: the docker reference grammar, and the `:latest`
 * default tag.
 *
 * Models pkg/util/parsers/parsers.go (ParseImageName) over github.com/distribution/reference
 * (ParseNormalizedNamed), and pkg/kubelet/images/image_manager.go (applyDefaultImageTag).
 */

/** The tag a reference without tag and digest gets (parsers.DefaultImageTag). */
export const DEFAULT_IMAGE_TAG = 'latest';

/** A parsed reference: repository (domain-qualified, as `Named.Name()`), tag and digest (either may be ''). */
export interface ParsedImageName {
  readonly repository: string;
  readonly tag: string;
  readonly digest: string;
}

/** Thrown by {@link parseImageName}; the message reads like the kubelet's. */
export class ImageReferenceError extends Error {
  override readonly name = 'ImageReferenceError';
}

const DEFAULT_DOMAIN = 'docker.io';
const LEGACY_DEFAULT_DOMAIN = 'index.docker.io';
const OFFICIAL_REPO_PREFIX = 'library/';
const NAME_TOTAL_LENGTH_MAX = 255;

// distribution/reference regexp.go, anchored pieces.
const alphanumeric = '[a-z0-9]+';
const separator = '(?:[._]|__|[-]+)';
const pathComponent = `${alphanumeric}(?:${separator}${alphanumeric})*`;
const domainNameComponent = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const ipv6address = '\\[(?:[a-fA-F0-9:]+)\\]';
const domainName = `${domainNameComponent}(?:\\.${domainNameComponent})*`;
const host = `(?:${domainName}|${ipv6address})`;
const domainAndPort = `${host}(?::[0-9]+)?`;
const tagPattern = '[\\w][\\w.-]{0,127}';
const digestPattern = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][A-Fa-f0-9]{32,}';
const remoteName = `${pathComponent}(?:/${pathComponent})*`;
const namePat = `(?:${domainAndPort}/)?${remoteName}`;
const referenceRegexp = new RegExp(`^(${namePat})(?::(${tagPattern}))?(?:@(${digestPattern}))?$`);
const anchoredIdentifier = /^[a-f0-9]{64}$/;

/**
 * Splits off the registry domain like `splitDockerDomain`: the first path component is a domain when
 * it contains `.` or `:`, is `localhost`, or has upper-case letters; otherwise the domain is docker.io
 * (with `library/` for single-component names).
 */
function splitDockerDomain(name: string): { domain: string; remainder: string } {
  const i = name.indexOf('/');
  let domain: string;
  let remainder: string;
  const first = i === -1 ? '' : name.slice(0, i);
  if (i === -1 || (!/[.:]/.test(first) && first !== 'localhost' && first.toLowerCase() === first)) {
    domain = DEFAULT_DOMAIN;
    remainder = name;
  } else {
    domain = first;
    remainder = name.slice(i + 1);
  }
  if (domain === LEGACY_DEFAULT_DOMAIN) domain = DEFAULT_DOMAIN;
  if (domain === DEFAULT_DOMAIN && !remainder.includes('/')) remainder = OFFICIAL_REPO_PREFIX + remainder;
  return { domain, remainder };
}

/**
 * Parses a reference like `ParseNormalizedNamed` and returns repository, tag and digest; the tag is
 * `latest` when there is neither tag nor digest. Throws {@link ImageReferenceError} with
 * `couldn't parse image name "<img>": <why>` for a reference that does not parse.
 *
 * Models parsers.ParseImageName.
 */
export function parseImageName(image: string): ParsedImageName {
  const fail = (why: string): never => {
    throw new ImageReferenceError(`couldn't parse image name ${JSON.stringify(image)}: ${why}`);
  };
  if (anchoredIdentifier.test(image)) fail(`invalid repository name (${image}), cannot specify 64-byte hexadecimal strings`);
  if (image === '') fail('invalid reference format');
  const { domain, remainder } = splitDockerDomain(image);
  const tagSep = remainder.indexOf(':');
  const remote = tagSep > -1 ? remainder.slice(0, tagSep) : remainder;
  if (remote.toLowerCase() !== remote) fail(`invalid reference format: repository name (${remote}) must be lowercase`);
  const full = `${domain}/${remainder}`;
  const m = referenceRegexp.exec(full);
  if (m === null) {
    // The whole string is matched again with upper case folded, to report the more useful cause.
    if (referenceRegexp.test(full.toLowerCase())) fail('invalid reference format: repository name must be lowercase');
    fail('invalid reference format');
  }
  const name = m?.[1] ?? '';
  if (name.length > NAME_TOTAL_LENGTH_MAX) fail(`repository name must not be more than ${NAME_TOTAL_LENGTH_MAX} characters`);
  const tag = m?.[2] ?? '';
  const digest = m?.[3] ?? '';
  return { repository: name, tag: tag === '' && digest === '' ? DEFAULT_IMAGE_TAG : tag, digest };
}

/**
 * The reference with `:latest` appended when it has neither tag nor digest; otherwise unchanged. The
 * name is *not* normalized (no `docker.io/library/` added), so the CRI stays agnostic of default
 * registries. Throws {@link ImageReferenceError} for a reference that does not parse.
 *
 * Models images.applyDefaultImageTag.
 */
export function applyDefaultImageTag(image: string): string {
  const { tag, digest } = parseImageName(image);
  if (digest === '' && tag !== '' && !image.endsWith(`:${tag}`)) return `${image}:${tag}`;
  return image;
}
