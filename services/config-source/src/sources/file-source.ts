/**
 * The file source: a directory of static pod manifests (or a single manifest file), listed at start,
 * relisted every `periodMs`, and watched with inotify (`fs.watch`) for changes between relists.
 *
 * Models pkg/kubelet/config/file.go (sourceFile, resetStoreFromPath, extractFromDir,
 * extractFromFile) and file_linux.go (the inotify watch). Every look sends the full list (the
 * kubelet's UndeltaStore sends a SET on every change), so a watch event simply triggers a relist
 * `debounceMs` after it. Events in that window ride along, and events during a relist cause one more
 * right after it, so a burst of writes costs a few relists, not one per file; the window does not
 * stretch with more events, so a directory that keeps changing cannot hold relists off.
 *
 * ```
 * start ─► relist ─► wait(period | first watch event + 5 ms | abort) ─► relist ─► …
 * ```
 */
import { watch } from 'node:fs';
import type { BigIntStats, FSWatcher } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
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
  const pods: SourcedPod[] = [];
  const errors: ManifestError[] = [];
  const skipped: { path: string; reason: string }[] = [];
  const seen = new Set<string>();
  let info;
  try {
    info = await stat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      cache?.clear();
      return { missing: true, pods, errors, skipped };
    }
    throw e;
  }
  const decodeFile = async (file: string, st: BigIntStats | undefined): Promise<DecodedFile | undefined> => {
    const stamp = st === undefined ? '' : `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
    const changedAt = st === undefined ? Number.POSITIVE_INFINITY : Number((st.mtimeNs > st.ctimeNs ? st.mtimeNs : st.ctimeNs) / 1_000_000n);
    const cached = cache?.get(file);
    if (cached !== undefined && stamp !== '' && cached.stamp === stamp && cached.readAt - cached.changedAt > RACY_MS) return cached;
    const readAt = Date.now();
    let text: string;
    try {
      text = await readManifestFile(file);
    } catch (e) {
      errors.push({ kind: 'file', location: file, message: e instanceof Error ? e.message : String(e) });
      cache?.delete(file);
      return undefined;
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
  };
  const readOne = async (file: string, st: BigIntStats | undefined): Promise<void> => {
    seen.add(file);
    const entry = await decodeFile(file, st);
    if (entry === undefined) return;
    pods.push(...entry.pods);
    if (entry.error !== undefined) errors.push(entry.error);
  };
  const prune = (): void => {
    if (cache !== undefined) for (const k of [...cache.keys()]) if (!seen.has(k)) cache.delete(k);
  };
  if (info.isFile()) {
    await readOne(path, await stat(path, { bigint: true }).catch(() => undefined));
    prune();
    return { missing: false, pods, errors, skipped };
  }
  if (!info.isDirectory()) throw new Error(`manifest path ${JSON.stringify(path)} is not a directory or file`);
  const files = (await readdir(path))
    .filter((n) => !n.startsWith('.'))
    .sort()
    .map((name) => join(path, name));
  // The files are stat'ed STAT_CONCURRENCY at a time (a directory of a thousand manifests is looked
  // at in a few ms, not one stat round trip after another), then handled in their sorted order.
  const stats = await mapConcurrently(files, STAT_CONCURRENCY, (file) =>
    stat(file, { bigint: true }).then(
      (st) => ({ st }),
      (e: unknown) => ({ error: e instanceof Error ? e.message : String(e) }),
    ),
  );
  for (const [i, file] of files.entries()) {
    const r = stats[i]!;
    if (!('st' in r)) {
      // Vanished between readdir and stat, or a dangling symlink.
      skipped.push({ path: file, reason: `can't get metadata: ${r.error}` });
      continue;
    }
    if (r.st.isDirectory()) skipped.push({ path: file, reason: 'not recursing into manifest path' });
    else if (r.st.isFile()) await readOne(file, r.st);
    else skipped.push({ path: file, reason: 'manifest path is not a directory or file' });
  }
  prune();
  return { missing: false, pods, errors, skipped };
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
  /** How long after the first watch event the relist starts (the events within ride along). @default 5 */
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
  #lastMissingLogged: boolean | undefined;
  readonly #cache: ManifestCache = new Map();

  constructor(options: FileSourceOptions) {
    this.#o = options;
    this.#periodMs = options.periodMs ?? 20_000;
  }

  /** Lists once and hands the listing on (awaiting it). Exposed for tests. */
  async relist(): Promise<void> {
    const { path, nodeName, logger } = this.#o;
    let listing: DirListing;
    try {
      listing = await listManifests(path, nodeName, this.#cache);
    } catch (e) {
      logger.error('unable to read manifest path', { path, err: e });
      return;
    }
    if (listing.missing !== this.#lastMissingLogged) {
      if (listing.missing) logger.info('manifest path does not exist, ignoring', { path });
      this.#lastMissingLogged = listing.missing;
    }
    for (const s of listing.skipped) logger.warn('skipped manifest path', { path: s.path, reason: s.reason });
    try {
      await this.#o.onListing({ source: 'file', pods: listing.pods, errors: listing.errors });
    } catch (e) {
      // Only a shutdown interrupts delivery (PodConfig retries otherwise); the loop sees the signal.
      logger.debug('listing not delivered', { path, err: e });
    }
  }

  /** Lists now and then every period or on a watch event, until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const stop = (): void => this.#stopWatching();
    signal.addEventListener('abort', stop, { once: true });
    try {
      while (!signal.aborted) {
        if (this.#o.watch ?? true) await this.#ensureWatcher();
        this.#dirty = false;
        await this.relist();
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

  #waitForWork(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const { clock } = this.#o;
      const done = (): void => {
        clock.clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.#wake = undefined;
        resolve();
      };
      const timer = clock.setTimeout(done, this.#periodMs);
      signal.addEventListener('abort', done, { once: true });
      this.#wake = done;
    });
  }

  /** A watch event: relist `debounceMs` after the first event of a window (later ones ride along). */
  #onWatchEvent(): void {
    if (this.#debounce !== undefined) return;
    this.#debounce = this.#o.clock.setTimeout(() => {
      this.#debounce = undefined;
      if (this.#wake !== undefined) this.#wake();
      else this.#dirty = true;
    }, this.#o.debounceMs ?? 5);
  }

  /** (Re)creates the inotify watch when missing or when the directory was replaced. */
  async #ensureWatcher(): Promise<void> {
    let ino: number | undefined;
    try {
      ino = (await stat(this.#o.path)).ino;
    } catch {
      ino = undefined;
    }
    if (this.#watcher !== undefined && ino === this.#watchedIno) return;
    this.#stopWatching();
    if (ino === undefined) return;
    try {
      const w = watch(this.#o.path, { persistent: false }, () => this.#onWatchEvent());
      w.on('error', (e) => {
        this.#o.logger.warn('manifest watch failed; relying on the periodic relist until it is re-established', { path: this.#o.path, err: e });
        if (this.#watcher === w) this.#stopWatching();
        this.#onWatchEvent();
      });
      this.#watcher = w;
      this.#watchedIno = ino;
    } catch (e) {
      this.#o.logger.warn('cannot watch manifest path; relying on the periodic relist', { path: this.#o.path, err: e });
    }
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
