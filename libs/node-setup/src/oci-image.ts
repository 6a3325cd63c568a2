/**
 * Builds OCI image archives without a registry, docker or a tar binary, and imports them into a
 * containerd with `ctr images import`.
 *
 * The image: one gzipped layer holding Debian's static busybox as `/bin/busybox`, a symlink per
 * applet (`/bin/sh`, `/bin/sleep`, …, from `busybox --list`), a shell-script shim for each applet of
 * the official busybox image the binary lacks (`printenv`, … from @splitlet/images; labels
 * `io.splitlet.busybox.shims` and `io.splitlet.busybox.missing` say which, and which are still
 * absent), `/etc/passwd` and `/etc/group`
 * (root, nobody), `/tmp` (1777), `/root`, `/home`, `/dev`, `/proc`, `/sys`, `/var`. Deterministic:
 * the same busybox binary always gives the same layer, config and manifest digests.
 *
 * The archive is an OCI image layout in a tar (`oci-layout`, `index.json`, `blobs/sha256/…`); each
 * index entry carries `io.containerd.image.name` (the full name containerd stores) and
 * `org.opencontainers.image.ref.name`.
 */
import { createHash } from 'node:crypto';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { GrpcRuntimeService } from '@splitlet/cri';
import { BUSYBOX_APPLETS, BUSYBOX_SHIMS } from '@splitlet/images';
import { IMAGES } from './images.js';
import type { ImageName } from './images.js';
import type { ContainerdPaths, Snapshotter } from './containerd-config.js';
import { isStaticBusybox } from './containerd.js';
import { RUNTIME_PATH } from './host-command.js';
import { writeTar } from './tar-writer.js';
import type { TarEntry } from './tar-writer.js';
import { RuntimeError } from './runtime-error.js';

/** Bump when the image recipe changes, so cached archives are rebuilt. */
const RECIPE_VERSION = 2;

/** The PATH in every image's config (the Docker Hub busybox image's). */
export const IMAGE_PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The media types used. */
export const MediaTypes = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layerGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
} as const;

/** What one image is made of. */
export interface ImageRecipe {
  /** A file-name-safe key for the cached archive. */
  key: string;
  /** The full names the image is imported under (`io.containerd.image.name`). */
  names: readonly string[];
  /** `config.Entrypoint`. @default none */
  entrypoint?: readonly string[];
  /** `config.Cmd`. */
  cmd: readonly string[];
  /** `config.Labels`. @default none */
  labels?: Readonly<Record<string, string>>;
}

/** The images {@link ensureImages} provides by default (see {@link IMAGES}). */
export const IMAGE_RECIPES: readonly ImageRecipe[] = [
  { key: 'busybox-1.36', names: [IMAGES.busybox136], cmd: ['sh'], labels: { 'org.opencontainers.image.version': '1.36', 'io.splitlet.image': 'busybox' } },
  {
    key: 'busybox-1.37',
    names: [IMAGES.busybox137, IMAGES.busyboxLatest],
    cmd: ['sh'],
    labels: { 'org.opencontainers.image.version': '1.37', 'io.splitlet.image': 'busybox' },
  },
  // busybox sleep accepts `infinity`; PID 1 ignores SIGTERM, and containerd stops sandboxes with SIGKILL.
  { key: 'pause-3.9', names: [IMAGES.pause], entrypoint: ['/bin/sleep'], cmd: ['infinity'], labels: { 'io.splitlet.image': 'pause' } },
];

/** A built image archive. */
export interface BuiltImage {
  /** The OCI layout tar. */
  path: string;
  names: readonly string[];
  /** `sha256:…` of the manifest (what containerd reports as the repo digest). */
  manifestDigest: string;
  /** `sha256:…` of the config: the image id CRI reports. */
  configDigest: string;
  /** `sha256:…` of the uncompressed layer (`rootfs.diff_ids[0]`). */
  diffId: string;
  /** False when the archive came from the cache. */
  built: boolean;
}

/** Options of {@link buildBusyboxImage}. */
export interface BuildImageOptions {
  recipe: ImageRecipe;
  /** Folder for the cached archives. */
  outDir: string;
  /**
   * The static busybox binary.
   * @default '/bin/busybox'
   */
  busybox?: string;
}

function sha256(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** What a busybox image built from a binary holds, against the official image's applets. */
export interface BusyboxContents {
  /** The binary's own applets (`busybox --list`). */
  applets: string[];
  /** Official applets the binary lacks that a shim script stands in for. */
  shims: string[];
  /** Official applets the image still lacks. */
  missing: string[];
}

/** Reads a busybox binary's applets and compares them with the official image's. */
export function busyboxContents(busyboxPath: string): BusyboxContents {
  const list = spawnSync(busyboxPath, ['--list'], { encoding: 'utf8' });
  if (list.status !== 0) throw new RuntimeError('Missing', `${busyboxPath} --list failed: ${list.stderr || list.error?.message}`);
  const applets = [...new Set(list.stdout.split('\n').map((s) => s.trim()))].filter((a) => a !== '' && a !== 'busybox' && !a.includes('/')).sort();
  const absent = BUSYBOX_APPLETS.filter((a) => !applets.includes(a));
  return { applets, shims: absent.filter((a) => Object.hasOwn(BUSYBOX_SHIMS, a)), missing: absent.filter((a) => !Object.hasOwn(BUSYBOX_SHIMS, a)) };
}

/** The labels that say what a busybox image contains besides the binary's applets. */
export function busyboxLabels(contents: BusyboxContents): Record<string, string> {
  return { 'io.splitlet.busybox.shims': contents.shims.join(','), 'io.splitlet.busybox.missing': contents.missing.join(',') };
}

/** The layer tar (uncompressed) for a busybox binary. Pure apart from running `busybox --list`. */
export function busyboxLayer(busyboxPath: string): Buffer {
  if (!isStaticBusybox(busyboxPath)) {
    throw new RuntimeError('Missing', `${busyboxPath} is not a static busybox; install it with apt-get install busybox-static`);
  }
  const binary = readFileSync(busyboxPath);
  const { applets, shims } = busyboxContents(busyboxPath);
  const dir = (path: string, mode = 0o755): TarEntry => ({ path, type: 'directory', mode });
  const file = (path: string, text: string, mode = 0o644): TarEntry => ({ path, type: 'file', mode, data: Buffer.from(text) });
  const entries: TarEntry[] = [
    dir('bin'),
    { path: 'bin/busybox', type: 'file', mode: 0o755, data: binary },
    ...applets.map((a): TarEntry => ({ path: `bin/${a}`, type: 'symlink', linkTarget: 'busybox' })),
    ...shims.map((a): TarEntry => ({ path: `bin/${a}`, type: 'file', mode: 0o755, data: Buffer.from(BUSYBOX_SHIMS[a] ?? '') })),
    dir('dev'),
    dir('etc'),
    file('etc/group', 'root:x:0:\nnogroup:x:65534:\nnobody:x:65534:\n'),
    file('etc/passwd', 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n'),
    dir('home'),
    dir('proc', 0o555),
    dir('root', 0o700),
    dir('sys', 0o555),
    dir('tmp', 0o1777),
    dir('usr'),
    dir('usr/bin'),
    dir('usr/sbin'),
    dir('var'),
    dir('var/spool'),
    dir('var/spool/mail'),
    dir('var/www'),
  ];
  return writeTar(entries);
}

/** The blobs and index of one image, from a layer. Pure. */
export function ociImage(
  recipe: ImageRecipe,
  layerTar: Buffer,
  layerGz: Buffer,
): { blobs: Map<string, Buffer>; index: Buffer; manifestDigest: string; configDigest: string; diffId: string } {
  const diffId = `sha256:${sha256(layerTar)}`;
  const layerDigest = `sha256:${sha256(layerGz)}`;
  const config: Record<string, unknown> = {
    created: '1970-01-01T00:00:00Z',
    architecture: 'amd64',
    os: 'linux',
    config: {
      Env: [IMAGE_PATH_ENV],
      ...(recipe.entrypoint === undefined ? {} : { Entrypoint: recipe.entrypoint }),
      Cmd: recipe.cmd,
      WorkingDir: '/',
      ...(recipe.labels === undefined ? {} : { Labels: recipe.labels }),
    },
    rootfs: { type: 'layers', diff_ids: [diffId] },
    history: [{ created: '1970-01-01T00:00:00Z', created_by: `splitlet oci-image (recipe ${RECIPE_VERSION}): static busybox` }],
  };
  const configBytes = Buffer.from(JSON.stringify(config));
  const configDigest = `sha256:${sha256(configBytes)}`;
  const manifest = {
    schemaVersion: 2,
    mediaType: MediaTypes.manifest,
    config: { mediaType: MediaTypes.config, digest: configDigest, size: configBytes.length },
    layers: [{ mediaType: MediaTypes.layerGzip, digest: layerDigest, size: layerGz.length }],
  };
  const manifestBytes = Buffer.from(JSON.stringify(manifest));
  const manifestDigest = `sha256:${sha256(manifestBytes)}`;
  const index = {
    schemaVersion: 2,
    mediaType: MediaTypes.index,
    manifests: recipe.names.map((name) => ({
      mediaType: MediaTypes.manifest,
      digest: manifestDigest,
      size: manifestBytes.length,
      platform: { architecture: 'amd64', os: 'linux' },
      annotations: {
        'io.containerd.image.name': name,
        'org.opencontainers.image.ref.name': refName(name),
      },
    })),
  };
  const blobs = new Map<string, Buffer>([
    [layerDigest, layerGz],
    [configDigest, configBytes],
    [manifestDigest, manifestBytes],
  ]);
  return { blobs, index: Buffer.from(JSON.stringify(index)), manifestDigest, configDigest, diffId };
}

/** The tag of a full image name (`docker.io/library/busybox:1.36` → `1.36`), as OCI layouts name refs. */
function refName(name: string): string {
  const slash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  return colon > slash ? name.slice(colon + 1) : 'latest';
}

/**
 * Builds (or takes from the cache) the OCI layout archive of one busybox-based image.
 *
 * Cached by content: the archive's file name carries a hash of the recipe, the recipe version and
 * the busybox binary, so a new busybox or recipe gives a new archive and the same ones are never
 * rebuilt. Writes atomically (temp file + rename): safe to run concurrently.
 */
export function buildBusyboxImage(options: BuildImageOptions): BuiltImage {
  const busybox = options.busybox ?? '/bin/busybox';
  if (!existsSync(busybox)) throw new RuntimeError('Missing', `${busybox} not found; install it with apt-get install busybox-static`);
  const binHash = sha256(readFileSync(busybox));
  const key = sha256(JSON.stringify({ v: RECIPE_VERSION, bin: binHash, recipe: options.recipe, applets: BUSYBOX_APPLETS, shims: BUSYBOX_SHIMS })).slice(0, 16);
  const path = join(options.outDir, `${options.recipe.key}-${key}.tar`);
  const metaPath = `${path}.json`;
  if (existsSync(path) && existsSync(metaPath)) {
    const meta = JSON.parse(readFileSync(metaPath, 'utf8')) as Omit<BuiltImage, 'built' | 'path'>;
    return { ...meta, path, built: false };
  }
  const layerTar = busyboxLayer(busybox);
  const layerGz = gzipSync(layerTar, { level: 6 });
  const recipe = { ...options.recipe, labels: { ...options.recipe.labels, ...busyboxLabels(busyboxContents(busybox)) } };
  const img = ociImage(recipe, layerTar, layerGz);
  const entries: TarEntry[] = [
    { path: 'oci-layout', type: 'file', data: Buffer.from(JSON.stringify({ imageLayoutVersion: '1.0.0' })) },
    { path: 'index.json', type: 'file', data: img.index },
    { path: 'blobs', type: 'directory' },
    { path: 'blobs/sha256', type: 'directory' },
    ...[...img.blobs].map(([digest, data]): TarEntry => ({ path: `blobs/sha256/${digest.slice('sha256:'.length)}`, type: 'file', data })),
  ];
  mkdirSync(options.outDir, { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, writeTar(entries));
  renameSync(tmp, path);
  const meta = { names: options.recipe.names, manifestDigest: img.manifestDigest, configDigest: img.configDigest, diffId: img.diffId };
  writeFileSync(metaPath, `${JSON.stringify(meta, null, 2)}\n`);
  return { ...meta, path, built: true };
}

/** Options of {@link importImage}. */
export interface ImportImageOptions {
  /**
   * The snapshotter to unpack into (must be containerd's CRI snapshotter).
   * @default 'overlayfs'
   */
  snapshotter?: Snapshotter;
  /**
   * The containerd namespace; CRI uses `k8s.io`.
   * @default 'k8s.io'
   */
  namespace?: string;
  /** @default 60000 */
  timeoutMs?: number;
}

/**
 * Imports an image archive into containerd: `ctr --address <sock> -n k8s.io images import
 * --all-platforms <tar>`. `socketOrAddress` may be `unix:///…` or a plain path. Idempotent
 * (importing the same archive again only re-tags). Fails with `ImportFailed` and ctr's output.
 */
export function importImage(socketOrAddress: string, tarPath: string, options: ImportImageOptions = {}): Promise<void> {
  const address = socketOrAddress.replace(/^unix:\/\//, '');
  const args = ['--address', address, '-n', options.namespace ?? 'k8s.io', 'images', 'import', '--all-platforms', '--snapshotter', options.snapshotter ?? 'overlayfs', tarPath];
  return new Promise((resolve, reject) => {
    execFile('ctr', args, { env: { PATH: RUNTIME_PATH }, timeout: options.timeoutMs ?? 60_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error === null) resolve();
      else reject(new RuntimeError('ImportFailed', `ctr ${args.join(' ')} failed: ${(stderr || stdout || error.message).trim()}`, { cause: error }));
    });
  });
}

/** The part of a running containerd {@link ensureImages} needs (a `LocalContainerd` fits). */
export interface ImageTarget {
  /** The CRI endpoint, `unix:///…`. */
  socket: string;
  paths: Pick<ContainerdPaths, 'images'>;
  snapshotter: Snapshotter;
}

/** What {@link ensureImages} did for one image. */
export interface EnsuredImage {
  names: readonly string[];
  /** The image id (`sha256:…` of the config) CRI reports. */
  id: string;
  /** False when every name was already present. */
  imported: boolean;
  buildMs: number;
  importMs: number;
}

/**
 * Makes sure every image of `recipes` is in the runtime's CRI image store: names already present
 * (CRI `ImageStatus`) are skipped; the others are built (cached under `paths.images`) and imported,
 * then awaited in `ImageStatus` (the CRI plugin picks up imports from containerd's events).
 * Idempotent; not meant to be run concurrently on the same runtime.
 *
 * @param recipes @default {@link IMAGE_RECIPES} (busybox 1.36, 1.37/latest, pause 3.9)
 */
export async function ensureImages(runtime: ImageTarget, recipes: readonly ImageRecipe[] = IMAGE_RECIPES, options: { busybox?: string } = {}): Promise<EnsuredImage[]> {
  const client = await GrpcRuntimeService.connect({ endpoint: runtime.socket, connectTimeoutMs: 5000, timeoutMs: 10_000 });
  try {
    const status = async (name: string): Promise<string | undefined> => (await client.ImageStatus({ image: { image: name } })).image?.id;
    const results: EnsuredImage[] = [];
    for (const recipe of recipes) {
      const ids = await Promise.all(recipe.names.map(status));
      if (ids.every((id) => id !== undefined)) {
        results.push({ names: recipe.names, id: ids[0] ?? '', imported: false, buildMs: 0, importMs: 0 });
        continue;
      }
      const t0 = performance.now();
      const built = buildBusyboxImage({ recipe, outDir: runtime.paths.images, ...(options.busybox === undefined ? {} : { busybox: options.busybox }) });
      const t1 = performance.now();
      await importImage(runtime.socket, built.path, { snapshotter: runtime.snapshotter });
      const deadline = Date.now() + 5000;
      for (const name of recipe.names) {
        while ((await status(name)) === undefined) {
          if (Date.now() > deadline) throw new RuntimeError('ImportFailed', `imported ${built.path}, but CRI ImageStatus does not show ${name}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      }
      results.push({ names: recipe.names, id: built.configDigest, imported: true, buildMs: Math.round(t1 - t0), importMs: Math.round(performance.now() - t1) });
    }
    return results;
  } finally {
    client.close();
  }
}

/** True if `name` is one of the names {@link ensureImages} provides. */
export function isLocalImage(name: string): name is ImageName {
  return (Object.values(IMAGES) as string[]).includes(name);
}
