/**
 * A minimal, deterministic tar writer (POSIX ustar, with pax extended headers for long names).
 *
 * Enough to build OCI image layers and OCI layout archives without a tar binary: directories,
 * regular files, symlinks, explicit modes and owners, and a fixed mtime so the same input always
 * gives the same bytes (and so the same layer digest).
 */

const BLOCK = 512;

/** The entry types this writer emits. */
export const TarEntryTypes = {
  file: '0',
  symlink: '2',
  directory: '5',
} as const;
export type TarEntryType = keyof typeof TarEntryTypes;

/** One entry of a tar archive. */
export interface TarEntry {
  /** The path inside the archive, without a leading `/`; directories may end in `/` (added if missing). */
  path: string;
  type: TarEntryType;
  /** Permission bits (e.g. `0o755`). @default 0o644 for files, 0o755 for directories, 0o777 for symlinks */
  mode?: number;
  /** @default 0 */
  uid?: number;
  /** @default 0 */
  gid?: number;
  /** Seconds since the epoch. @default 0 (deterministic) */
  mtime?: number;
  /** The file's content (files only). @default empty */
  data?: Uint8Array;
  /** The symlink's target (symlinks only). */
  linkTarget?: string;
}

function octal(value: number, width: number): string {
  // width includes the terminating NUL.
  const s = value.toString(8);
  if (s.length > width - 1) throw new RangeError(`tar: value ${value} does not fit in ${width - 1} octal digits`);
  return s.padStart(width - 1, '0');
}

function putString(buf: Buffer, offset: number, width: number, s: string): void {
  const b = Buffer.from(s, 'utf8');
  if (b.length > width) throw new RangeError(`tar: "${s}" is longer than ${width} bytes`);
  b.copy(buf, offset);
}

/** Splits a path into ustar `prefix` (≤155 bytes) and `name` (≤100 bytes), or undefined if it cannot. */
function splitUstarPath(path: string): { prefix: string; name: string } | undefined {
  if (Buffer.byteLength(path) <= 100) return { prefix: '', name: path };
  for (let i = path.indexOf('/'); i !== -1; i = path.indexOf('/', i + 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100 && name !== '') return { prefix, name };
  }
  return undefined;
}

/** One pax record: `"<len> <key>=<value>\n"`, where len counts the whole record including itself. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const bodyLen = Buffer.byteLength(body);
  const digits = String(bodyLen).length;
  let len = bodyLen + digits;
  if (String(len).length > digits) len += 1; // adding the length's own digits carried it over (e.g. 98 + 2 = 100)
  return `${len}${body}`;
}

function header(fields: { name: string; prefix: string; mode: number; uid: number; gid: number; size: number; mtime: number; typeflag: string; linkname: string }): Buffer {
  const h = Buffer.alloc(BLOCK);
  putString(h, 0, 100, fields.name);
  putString(h, 100, 8, octal(fields.mode & 0o7777, 8));
  putString(h, 108, 8, octal(fields.uid, 8));
  putString(h, 116, 8, octal(fields.gid, 8));
  putString(h, 124, 12, octal(fields.size, 12));
  putString(h, 136, 12, octal(fields.mtime, 12));
  h.fill(0x20, 148, 156); // checksum field counts as spaces while summing
  putString(h, 156, 1, fields.typeflag);
  putString(h, 157, 100, fields.linkname);
  putString(h, 257, 6, 'ustar'); // "ustar\0"
  putString(h, 263, 2, '00');
  putString(h, 265, 32, 'root');
  putString(h, 297, 32, 'root');
  putString(h, 345, 155, fields.prefix);
  let sum = 0;
  for (const byte of h) sum += byte;
  putString(h, 148, 8, `${octal(sum, 7)}\0 `.slice(0, 8));
  return h;
}

/** The longest prefix of `s` that fits in `max` UTF-8 bytes (the ustar fallback when pax carries the full value). */
function truncateBytes(s: string, max: number): string {
  let out = s;
  while (Buffer.byteLength(out) > max) out = out.slice(0, -1);
  return out;
}

function padding(size: number): Buffer {
  const rest = size % BLOCK;
  return Buffer.alloc(rest === 0 ? 0 : BLOCK - rest);
}

/**
 * Serializes entries into one tar archive (in the given order), ending with the two zero blocks.
 * Pure and deterministic: the same entries give the same bytes. Throws RangeError for values that
 * do not fit (e.g. a file over 8 GiB).
 */
export function writeTar(entries: readonly TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    let path = e.path.replace(/^\/+/, '');
    if (e.type === 'directory' && !path.endsWith('/')) path += '/';
    const data = e.type === 'file' ? (e.data ?? new Uint8Array()) : new Uint8Array();
    const linkname = e.type === 'symlink' ? (e.linkTarget ?? '') : '';
    if (e.type === 'symlink' && linkname === '') throw new RangeError(`tar: symlink ${path} has no target`);
    const mode = e.mode ?? (e.type === 'file' ? 0o644 : e.type === 'directory' ? 0o755 : 0o777);
    const mtime = e.mtime ?? 0;
    const uid = e.uid ?? 0;
    const gid = e.gid ?? 0;

    const split = splitUstarPath(path);
    const linkFits = Buffer.byteLength(linkname) <= 100;
    if (split === undefined || !linkFits) {
      let records = '';
      if (split === undefined) records += paxRecord('path', path);
      if (!linkFits) records += paxRecord('linkpath', linkname);
      const body = Buffer.from(records, 'utf8');
      const paxName = truncateBytes(`PaxHeaders/${path.replace(/\/$/, '').split('/').pop() ?? 'entry'}`, 100);
      parts.push(header({ name: paxName, prefix: '', mode: 0o644, uid: 0, gid: 0, size: body.length, mtime, typeflag: 'x', linkname: '' }));
      parts.push(body, padding(body.length));
    }
    const names = split ?? { prefix: '', name: truncateBytes(path, 100) };
    parts.push(
      header({
        name: names.name,
        prefix: names.prefix,
        mode,
        uid,
        gid,
        size: data.length,
        mtime,
        typeflag: TarEntryTypes[e.type],
        linkname: linkFits ? linkname : truncateBytes(linkname, 100),
      }),
    );
    if (data.length > 0) parts.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength), padding(data.length));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}
