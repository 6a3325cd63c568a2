/**
 * The file source: a directory of static pod manifests (or a single manifest file), listed at start,
 * relisted every `periodMs`, and watched with inotify (`fs.watch`) for changes between relists.
 *
 * Models pkg/kubelet/config/file.go (sourceFile, resetStoreFromPath, extractFromDir,
 * extractFromFile) and file_linux.go (the inotify watch). Every look sends the full list (the
 * kubelet's UndeltaStore sends a SET on every change). A watch event is looked at `debounceMs` after
 * it, and only the entries the events named are stat'ed and read again — as the kubelet re-extracts
 * the one file an event names — so the listing carries what changed and PodConfig merges those pods
 * alone: a pod written into a directory of a thousand costs one file, not a thousand. Events in the
 * window ride along, and events during a look cause one more right after it, so a burst of writes
 * costs a few looks, not one per file; the window does not stretch with more events, so a directory
 * that keeps changing cannot hold looks off. The full relist comes a period after the last one
 * whatever the events, and at once when an event names no entry or the watch was (re)made.
 *
 * ```
 * start ─► relist ─► wait(period due | first watch event + 1 ms | abort) ─► relist or look again ─► …
 * ```
 */
import { watch } from 'node:fs';
import type { BigIntStats, FSWatcher } from 'node:fs';
import { lstat, open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock, TimerHandle } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import { decodeManifest, MAX_CONFIG_LENGTH } from './manifest-decoder.js';
import type { ManifestError, SourceListing, SourcedPod } from './listing.js';

/** Reads at most `limit` bytes of a regular file; a larger file is an error naming its size. */
export async function readManifestFile(path: string, limit: number = MAX_CONFIG_LENGTH): Promise<string> {
  const fh = await open(path, 'r');
  try {
    const st = await fh.stat();
    if (st.size > limit) throw new Error(tooLarge(path, st.size, limit));
    // The file may grow between stat and read: read at most limit + 1 bytes and check again.
    const buf = Buffer.alloc(Math.min(st.size, limit) + 1);
    let n = 0;
    while (n < buf.length) {
      const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    if (n > limit) throw new Error(tooLarge(path, n, limit, true));
    return buf.subarray(0, n).toString('utf8');
  } finally {
    await fh.close();
  }
}

function tooLarge(path: string, size: number, limit: number, atLeast = false): string {
  return `manifest file ${JSON.stringify(path)} is ${atLeast ? 'more than ' : ''}${size} bytes, larger than the limit of ${limit} bytes (maxConfigLength)`;
}

/** What one look at the path found, before PodConfig. */
export interface DirListing {
  /** The path does not exist (the source is still seen, with no pods). */
  readonly missing: boolean;
  readonly pods: SourcedPod[];
  readonly errors: ManifestError[];
  /** Entries skipped without being an error (subdirectories, special files), for the log. */
  readonly skipped: { path: string; reason: string }[];
  /** What each regular file contributed, by path in the listing's (sorted) order. */
  readonly files: Map<string, FileLook>;
}

/** What one manifest file contributed to a look: its pods, or the error that kept it from having any. */
export interface FileLook {
  readonly pods: readonly SourcedPod[];
  readonly error: ManifestError | undefined;
}

/**
 * What one manifest file decoded to, kept between looks: an unchanged file is not decoded again, so
 * its pods are the very objects of the previous look (PodConfig then skips them as unchanged).
 */
interface DecodedFile {
  /** Inode, size, mtime and ctime (ns) when the file was read. */
  readonly stamp: string;
  /** When the read started (ms since the epoch). */
  readonly readAt: number;
  /** The newest of mtime and ctime (ms since the epoch) when it was read. */
  readonly changedAt: number;
  readonly text: string;
  readonly pods: readonly SourcedPod[];
  readonly error: ManifestError | undefined;
}

/** The decoded manifests by path (see {@link listManifests}). */
export type ManifestCache = Map<string, DecodedFile>;

/**
 * A file's stat stamp is trusted to say it is unchanged only when the file had last changed this
 * long before it was read: file times come from a coarse clock, so a write right after a read
 * could otherwise keep the stamp (git's "racily clean" entries). Such a file is read again and its
 * text compared instead.
 */
const RACY_MS = 2000;

/**
 * Lists `path` once: a directory's entries not starting with `.`, sorted, regular files only
 * (subdirectories are not recursed into), each decoded on its own; or `path` itself when it is a
 * file. A bad file contributes no pods and one {@link ManifestError}.
 *
 * With a `cache`, a file whose stat stamp is unchanged since it was read (and was not racily
 * fresh then), or whose text is unchanged, is not decoded again: its pods are the same objects.
 * Entries of files no longer listed are dropped.
 *
 * Models sourceFile.resetStoreFromPath / extractFromDir.
 */
export async function listManifests(path: string, nodeName: string, cache?: ManifestCache): Promise<DirListing> {
  const files = new Map<string, FileLook>();
  const skipped: { path: string; reason: string }[] = [];
  let info;
  try {
    info = await stat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      cache?.clear();
      return { missing: true, pods: [], errors: [], skipped, files };
    }
    throw e;
  }
  const prune = (): void => {
    if (cache !== undefined) for (const k of [...cache.keys()]) if (!files.has(k)) cache.delete(k);
  };
  if (info.isFile()) {
    files.set(path, await lookAtFile(path, await stat(path, { bigint: true }).catch(() => undefined), nodeName, cache));
    prune();
    return { missing: false, ...flatten(files), skipped, files };
  }
  if (!info.isDirectory()) throw new Error(`manifest path ${JSON.stringify(path)} is not a directory or file`);
  const names = (await readdir(path)).filter((n) => !n.startsWith('.')).sort();
  for (const [file, look] of await lookAtEntries(path, names, nodeName, cache, skipped)) if (look !== undefined) files.set(file, look);
  prune();
  return { missing: false, ...flatten(files), skipped, files };
}

/**
 * Looks again at the named entries of directory `dir` alone (those an inotify event named), as
 * {@link listManifests} looks at each entry: a regular file's {@link FileLook}, or `undefined` when
 * the entry is gone or is not a regular file (then in `skipped` with the reason, as in a listing).
 * Their cache entries are updated; the others' are left alone.
 *
 * Models sourceFile.produceWatchEvent (a watch event re-extracts only the file it names).
 */
export async function lookAgain(
  dir: string,
  names: Iterable<string>,
  nodeName: string,
  cache: ManifestCache,
): Promise<{ files: Map<string, FileLook | undefined>; skipped: { path: string; reason: string }[] }> {
  const skipped: { path: string; reason: string }[] = [];
  const wanted = [...names].filter((n) => !n.startsWith('.')).sort();
  const files = await lookAtEntries(dir, wanted, nodeName, cache, skipped);
  for (const [file, look] of files) if (look === undefined) cache.delete(file);
  return { files, skipped };
}

/** Every file's pods and errors, in the map's order. */
function flatten(files: ReadonlyMap<string, FileLook>): { pods: SourcedPod[]; errors: ManifestError[] } {
  const pods: SourcedPod[] = [];
  const errors: ManifestError[] = [];
  for (const look of files.values()) {
    pods.push(...look.pods);
    if (look.error !== undefined) errors.push(look.error);
  }
  return { pods, errors };
}

/**
 * The entries `names` of `dir`, in that order: each regular file's look, `undefined` for an entry
 * that is gone, a directory or a special file (the last two, and a dangling symlink, in `skipped`).
 * The entries are stat'ed STAT_CONCURRENCY at a time (a directory of a thousand manifests is looked
 * at in a few ms, not one stat round trip after another), then read in order.
 */
async function lookAtEntries(
  dir: string,
  names: readonly string[],
  nodeName: string,
  cache: ManifestCache | undefined,
  skipped: { path: string; reason: string }[],
): Promise<Map<string, FileLook | undefined>> {
  const paths = names.map((name) => join(dir, name));
  const stats = await mapConcurrently(paths, STAT_CONCURRENCY, (file) =>
    stat(file, { bigint: true }).then(
      (st) => ({ st }),
      (e: unknown) => ({ error: e as NodeJS.ErrnoException }),
    ),
  );
  const out = new Map<string, FileLook | undefined>();
  for (const [i, file] of paths.entries()) {
    const r = stats[i]!;
    out.set(file, undefined);
    if (!('st' in r)) {
      // Vanished between readdir and stat (or since the watch event), or a dangling symlink.
      if (
        r.error.code !== 'ENOENT' ||
        (await lstat(file).then(
          () => true,
          () => false,
        ))
      )
        skipped.push({ path: file, reason: `can't get metadata: ${r.error.message}` });
      continue;
    }
    if (r.st.isDirectory()) skipped.push({ path: file, reason: 'not recursing into manifest path' });
    else if (r.st.isFile()) out.set(file, await lookAtFile(file, r.st, nodeName, cache));
    else skipped.push({ path: file, reason: 'manifest path is not a directory or file' });
  }
  return out;
}

/** One regular file's look: decoded again only when the cache cannot vouch that it is unchanged. */
async function lookAtFile(file: string, st: BigIntStats | undefined, nodeName: string, cache: ManifestCache | undefined): Promise<FileLook> {
  const stamp = st === undefined ? '' : `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  const changedAt = st === undefined ? Number.POSITIVE_INFINITY : Number((st.mtimeNs > st.ctimeNs ? st.mtimeNs : st.ctimeNs) / 1_000_000n);
  const cached = cache?.get(file);
  if (cached !== undefined && stamp !== '' && cached.stamp === stamp && cached.readAt - cached.changedAt > RACY_MS) return cached;
  const readAt = Date.now();
  let text: string;
  try {
    text = await readManifestFile(file);
  } catch (e) {
    cache?.delete(file);
    return { pods: [], error: { kind: 'file', location: file, message: e instanceof Error ? e.message : String(e) } };
  }
  let entry: DecodedFile;
  if (cached !== undefined && cached.text === text) entry = { ...cached, stamp, readAt, changedAt };
  else {
    const decoded = decodeManifest(text, nodeName, { kind: 'file', path: file });
    entry = decoded.ok
      ? { stamp, readAt, changedAt, text, pods: decoded.pods.map((pod) => ({ pod, origin: file })), error: undefined }
      : {
          stamp,
          readAt,
          changedAt,
          text,
          pods: [],
          error: { kind: 'file', location: file, message: decoded.message, ...(decoded.document !== undefined ? { document: decoded.document } : {}) },
        };
  }
  cache?.set(file, entry);
  return entry;
}

/** How many manifest files a look stats at once. */
const STAT_CONCURRENCY = 32;

/** `fn` over `items` with at most `limit` calls in flight; the results in the items' order. */
async function mapConcurrently<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Options of {@link FileSource}. */
export interface FileSourceOptions {
  /** The manifest directory (or file). */
  readonly path: string;
  readonly nodeName: string;
  /** `fileCheckFrequency`. @default 20000 */
  readonly periodMs?: number;
  /**
   * How long after the first watch event the look starts (the events within ride along). Events
   * during a look bring one more look right after it, so a burst of writes batches itself however
   * short this is; it is the latency every manifest pays before its pod is seen. @default 1 (a
   * containerd pod's start, manifest to Running, was measured with 5: 5 ms of its ~55 ms overhead)
   */
  readonly debounceMs?: number;
  /** Watch with inotify between relists. @default true */
  readonly watch?: boolean;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Receives every listing; awaited before the next look (so updates stay in order). */
  readonly onListing: (listing: SourceListing) => Promise<void>;
  /** Called after each completed relist (health by progress). */
  readonly onProgress?: () => void;
}

/** A running file source. Create it, then `run(signal)`; it stops when the signal aborts. */
export class FileSource {
  readonly #o: FileSourceOptions;
  readonly #periodMs: number;
  #watcher: FSWatcher | undefined;
  #watchedIno: number | undefined;
  #wake: (() => void) | undefined;
  #debounce: TimerHandle | undefined;
  /** A debounced watch event fired while no wait was in progress. */
  #dirty = false;
  /** The entries watch events named since the last look, or `all` when one named none (or the watch failed). */
  #named: Set<string> | 'all' = new Set();
  /** When the last full relist started (clock ms): the next one is due a period after it. */
  #lastRelistAt = Number.NEGATIVE_INFINITY;
  /** The directory's files as last seen, in listing order (undefined until a relist found a directory). */
  #files: Map<string, FileLook> | undefined;
  #lastMissingLogged: boolean | undefined;
  readonly #cache: ManifestCache = new Map();

  constructor(options: FileSourceOptions) {
    this.#o = options;
    this.#periodMs = options.periodMs ?? 20_000;
  }

  /** Lists once and hands the listing on (awaiting it). Exposed for tests. */
  async relist(): Promise<void> {
    const { path, nodeName, logger } = this.#o;
    this.#lastRelistAt = this.#o.clock.now();
    let listing: DirListing;
    try {
      listing = await listManifests(path, nodeName, this.#cache);
    } catch (e) {
      this.#files = undefined;
      logger.error('unable to read manifest path', { path, err: e });
      return;
    }
    // Only a directory's entries are looked at one by one; a single file is always listed whole.
    this.#files = listing.missing || listing.files.has(path) ? undefined : listing.files;
    if (listing.missing !== this.#lastMissingLogged) {
      if (listing.missing) logger.info('manifest path does not exist, ignoring', { path });
      this.#lastMissingLogged = listing.missing;
    }
    for (const s of listing.skipped) logger.warn('skipped manifest path', { path: s.path, reason: s.reason });
    await this.#deliver({ source: 'file', pods: listing.pods, errors: listing.errors });
  }

  /**
   * Looks again at the named entries alone and hands on the directory's listing with those changes
   * (O(named entries) file system calls, and PodConfig merges the changed pods alone), as the
   * kubelet's watch re-reads only the file an event names.
   */
  async #lookAgain(files: Map<string, FileLook>, names: ReadonlySet<string>): Promise<void> {
    const { path, nodeName, logger } = this.#o;
    let again: Awaited<ReturnType<typeof lookAgain>>;
    try {
      again = await lookAgain(path, names, nodeName, this.#cache);
    } catch (e) {
      logger.error('unable to read manifest path', { path, err: e });
      return this.relist();
    }
    for (const s of again.skipped) logger.warn('skipped manifest path', { path: s.path, reason: s.reason });
    const upserted: SourcedPod[] = [];
    const removed = new Set<string>();
    let added = false;
    for (const [file, look] of again.files) {
      const before = files.get(file);
      for (const p of before?.pods ?? []) removed.add(p.pod.metadata.uid);
      if (look === undefined) {
        files.delete(file);
        continue;
      }
      if (before === undefined) added = true;
      files.set(file, look);
      for (const p of look.pods) {
        removed.delete(p.pod.metadata.uid);
        if (!before?.pods.includes(p)) upserted.push(p);
      }
    }
    if (added) {
      // A new file takes its sorted place, as a relist would list it.
      const sorted = [...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      files.clear();
      for (const [file, look] of sorted) files.set(file, look);
    }
    await this.#deliver({ source: 'file', ...flatten(files), changes: { upserted, removed: [...removed] } });
  }

  async #deliver(listing: SourceListing): Promise<void> {
    try {
      await this.#o.onListing(listing);
    } catch (e) {
      // Only a shutdown interrupts delivery (PodConfig retries otherwise); the loop sees the signal.
      this.#o.logger.debug('listing not delivered', { path: this.#o.path, err: e });
    }
  }

  /**
   * Lists now, then on every watch event (the entries it names alone) and in full every period,
   * until `signal` aborts.
   */
  async run(signal: AbortSignal): Promise<void> {
    const stop = (): void => this.#stopWatching();
    signal.addEventListener('abort', stop, { once: true });
    try {
      while (!signal.aborted) {
        if ((this.#o.watch ?? true) && (await this.#ensureWatcher())) this.#named = 'all';
        this.#dirty = false;
        const named = this.#named;
        this.#named = new Set();
        const files = this.#files;
        if (named === 'all' || files === undefined || this.#o.clock.now() - this.#lastRelistAt >= this.#periodMs) await this.relist();
        else if (named.size > 0) await this.#lookAgain(files, named);
        this.#o.onProgress?.();
        if (signal.aborted) break;
        if (this.#dirty) continue;
        await this.#waitForWork(signal);
      }
    } finally {
      signal.removeEventListener('abort', stop);
      this.#stopWatching();
    }
  }

  /** Until the next full relist is due, a debounced watch event or `signal` aborts. */
  #waitForWork(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const { clock } = this.#o;
      const done = (): void => {
        clock.clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.#wake = undefined;
        resolve();
      };
      const timer = clock.setTimeout(done, Math.max(0, this.#lastRelistAt + this.#periodMs - clock.now()));
      signal.addEventListener('abort', done, { once: true });
      this.#wake = done;
    });
  }

  /**
   * A watch event naming `name` (null: none): looked at `debounceMs` after the first event of a
   * window (later ones ride along).
   */
  #onWatchEvent(name: string | null): void {
    if (name === null) this.#named = 'all';
    else if (this.#named !== 'all') this.#named.add(name);
    if (this.#debounce !== undefined) return;
    this.#debounce = this.#o.clock.setTimeout(() => {
      this.#debounce = undefined;
      if (this.#wake !== undefined) this.#wake();
      else this.#dirty = true;
    }, this.#o.debounceMs ?? 1);
  }

  /**
   * (Re)creates the inotify watch when missing or when the directory was replaced. True when the
   * watch changed (events may have been missed: the next look is a full relist).
   */
  async #ensureWatcher(): Promise<boolean> {
    let ino: number | undefined;
    try {
      ino = (await stat(this.#o.path)).ino;
    } catch {
      ino = undefined;
    }
    if (ino === this.#watchedIno && (this.#watcher !== undefined || ino === undefined)) return false;
    this.#stopWatching();
    if (ino === undefined) return true;
    try {
      const w = watch(this.#o.path, { persistent: false }, (_event, name) => this.#onWatchEvent(name));
      w.on('error', (e) => {
        this.#o.logger.warn('manifest watch failed; relying on the periodic relist until it is re-established', { path: this.#o.path, err: e });
        if (this.#watcher === w) this.#stopWatching();
        this.#onWatchEvent(null);
      });
      this.#watcher = w;
      this.#watchedIno = ino;
    } catch (e) {
      this.#o.logger.warn('cannot watch manifest path; relying on the periodic relist', { path: this.#o.path, err: e });
    }
    return true;
  }

  #stopWatching(): void {
    if (this.#debounce !== undefined) {
      this.#o.clock.clearTimeout(this.#debounce);
      this.#debounce = undefined;
    }
    this.#watcher?.close();
    this.#watcher = undefined;
    this.#watchedIno = undefined;
  }
}
