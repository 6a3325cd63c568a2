/**
 * What a person reads while `splitlet up` runs: each process's JSON log line
 * (`{"time","level","service","msg",…fields}`, libs/telemetry) as one readable line —
 *
 *   12:03:04.512 pod-worker-1   INFO  pod synced  pod=default/web-node uid=3f2a… took=12ms
 *   12:03:05.001 cri-adapter    WARN  container runtime not reachable yet  attempt=2 err="connect ENOENT …"
 *
 * — time, process, level, message and the fields that say something (the node, span ids and
 * empty values dropped; a trace id only on warnings and errors, shortened; long values cut).
 * Colour only on a TTY: the process in its own colour, warnings yellow, errors red and bold, debug
 * dim. A line that is not a log record (a stack trace, a crash message) is printed as it came.
 * The log files keep the JSON; `--log-format json` prints it unchanged.
 */

/** `console` (readable, the default) or `json` (the lines as the processes wrote them). */
export type LogFormat = 'console' | 'json';

/** Options of {@link formatLogLine}. */
export interface ConsoleFormatOptions {
  readonly color: boolean;
  /** Width the process column is padded to. */
  readonly processWidth: number;
  /** ANSI colour code of this process's name. */
  readonly processColor?: number;
  /** Show records at this level and above. @default 'debug' (the process already filtered by LOG_LEVEL) */
  readonly minLevel?: 'debug' | 'info' | 'warn' | 'error';
}

const LEVELS = { debug: 0, info: 1, warn: 2, error: 3 } as const;
type Level = keyof typeof LEVELS;

/** Fields never printed: the frame (time, level, service, msg), the node and instance (the same on every line of a process), span ids. */
const HIDDEN = new Set(['time', 'level', 'service', 'msg', 'node', 'nodeName', 'instance', 'span_id', 'trace_id']);
const MAX_VALUE = 160;

const sgr = (on: boolean, code: string, s: string): string => (on ? `\u001b[${code}m${s}\u001b[0m` : s);

function isLevel(v: unknown): v is Level {
  return typeof v === 'string' && v in LEVELS;
}

/** A field value for `key=value`: text bare unless it has a space, quote or `=` (then JSON-quoted); objects as JSON; long values cut. */
export function formatValue(v: unknown): string {
  const cut = (s: string): string => (s.length > MAX_VALUE ? `${s.slice(0, MAX_VALUE - 1)}…` : s);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  // Objects stay JSON (already unambiguous); text is quoted when it has spaces, quotes or `=`.
  if (typeof v === 'object' && !(Array.isArray(v) && v.every((x) => typeof x === 'string' || typeof x === 'number')))
    return cut(JSON.stringify(v) ?? Object.prototype.toString.call(v));
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- objects returned above: v is a primitive, a function or a flat array here
  const s = cut(Array.isArray(v) ? v.join(',') : String(v));
  return s === '' || /[\s"=]/.test(s) ? JSON.stringify(s) : s;
}

/** `HH:MM:SS.mmm` of an ISO time, in local time; the text itself when it does not parse. */
function clock(time: unknown): string {
  const d = typeof time === 'string' ? new Date(time) : undefined;
  if (d === undefined || Number.isNaN(d.getTime())) return '            ';
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

/**
 * One process's output line as the console shows it, or undefined when the record is below
 * `minLevel`. Never throws: anything that is not a JSON log record is passed through.
 */
export function formatLogLine(processName: string, line: string, o: ConsoleFormatOptions): string | undefined {
  const name = processName.padEnd(o.processWidth);
  const who = o.color && o.processColor !== undefined ? sgr(true, String(o.processColor), name) : name;
  let rec: Record<string, unknown> | undefined;
  if (line.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) rec = parsed as Record<string, unknown>;
    } catch {
      rec = undefined;
    }
  }
  if (rec === undefined || !isLevel(rec['level']) || typeof rec['msg'] !== 'string') return `${' '.repeat(12)} ${who} ${line}`;
  const level = rec['level'];
  if (LEVELS[level] < LEVELS[o.minLevel ?? 'debug']) return undefined;
  const fields: string[] = [];
  let err: string | undefined;
  for (const [k, v] of Object.entries(rec)) {
    if (HIDDEN.has(k) || v === undefined || v === '' || (typeof v === 'object' && v !== null && Object.keys(v).length === 0)) continue;
    if (k === 'err' || k === 'error') err = `${k}=${formatValue(v)}`;
    else fields.push(`${k}=${formatValue(v)}`);
  }
  if (err !== undefined) fields.push(err);
  if (LEVELS[level] >= LEVELS.warn && typeof rec['trace_id'] === 'string') fields.push(`trace=${rec['trace_id'].slice(0, 8)}`);
  const tag = level.toUpperCase().padEnd(5);
  const levelText = level === 'error' ? sgr(o.color, '1;31', tag) : level === 'warn' ? sgr(o.color, '33', tag) : level === 'debug' ? sgr(o.color, '2', tag) : tag;
  const msg = level === 'error' ? sgr(o.color, '1', rec['msg']) : level === 'debug' ? sgr(o.color, '2', rec['msg']) : rec['msg'];
  const rest = fields.length === 0 ? '' : LEVELS[level] >= LEVELS.warn ? `  ${fields.join(' ')}` : `  ${sgr(o.color, '2', fields.join(' '))}`;
  return `${sgr(o.color, '2', clock(rec['time']))} ${who} ${levelText} ${msg}${rest}`;
}
