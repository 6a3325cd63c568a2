import { context, isSpanContextValid, trace } from '@opentelemetry/api';
import { redact } from './redact.js';

/** Log levels by severity (a logger drops records below its level). */
export const LogLevels = { debug: 10, info: 20, warn: 30, error: 40 } as const;

/** One of `debug`, `info`, `warn`, `error`. */
export type LogLevel = keyof typeof LogLevels;

/** Structured fields of a record. Secret-looking keys are redacted at any depth; an `Error` is serialized. */
export type LogFields = Readonly<Record<string, unknown>>;

/** Where log lines go: anything with a `write(string)` (a `Writable`, `process.stdout`, a test array). */
export interface LogStream {
  write(line: string): unknown;
}

/**
 * A structured JSON-lines logger. Each call writes exactly one line:
 * `{"time","level","service","msg","trace_id"?,"span_id"?, ...fields}`. Safe to call from any
 * async context; never throws.
 */
export interface Logger {
  /** The minimum level written. */
  readonly level: LogLevel;
  /** True when records of `level` are written (to skip building expensive fields). */
  isEnabled(level: LogLevel): boolean;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every record (the child's fields win over the parent's). */
  child(fields: LogFields): Logger;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** The `service` field of every record. */
  readonly service: string;
  /** Minimum level written. @default 'info' */
  readonly level?: LogLevel;
  /** Fields added to every record. */
  readonly fields?: LogFields;
  /** Destination. @default process.stdout */
  readonly stream?: LogStream;
  /** Time source for the `time` field (a test seam). @default () => new Date() */
  readonly now?: () => Date;
}

/** Keys the logger writes itself; a field with one of these names is written as `field_<name>`. */
const RESERVED = new Set(['time', 'level', 'service', 'msg', 'trace_id', 'span_id']);

/** True when `s` names a {@link LogLevel} (for parsing configuration). */
export function isLogLevel(s: string): s is LogLevel {
  return Object.hasOwn(LogLevels, s);
}

/**
 * Creates a structured JSON-lines logger. Every record carries `trace_id` and `span_id` of the span
 * active in the OTel context at the call (omitted when there is none), and the values of keys that
 * look like secrets (password, token, secret, authorization, auth, credentials,
 * dockerconfigjson…) are replaced by `"[REDACTED]"` at any depth.
 *
 * Log once, at the boundary (an adapter or `main`), with the error under `err`.
 */
export function createLogger(options: LoggerOptions): Logger {
  const stream: LogStream = options.stream ?? process.stdout;
  const now = options.now ?? (() => new Date());
  return makeLogger(options.service, options.level ?? 'info', options.fields ?? {}, stream, now);
}

function makeLogger(service: string, level: LogLevel, bound: LogFields, stream: LogStream, now: () => Date): Logger {
  const threshold = LogLevels[level];
  const write = (lvl: LogLevel, msg: string, fields: LogFields | undefined): void => {
    if (LogLevels[lvl] < threshold) return;
    const record: Record<string, unknown> = { time: now().toISOString(), level: lvl, service, msg };
    const spanContext = trace.getSpan(context.active())?.spanContext();
    if (spanContext !== undefined && isSpanContextValid(spanContext)) {
      record['trace_id'] = spanContext.traceId;
      record['span_id'] = spanContext.spanId;
    }
    let line: string;
    try {
      const merged = redact(fields === undefined ? bound : { ...bound, ...fields }) as Record<string, unknown>;
      for (const [k, v] of Object.entries(merged)) record[RESERVED.has(k) ? `field_${k}` : k] = v;
      line = JSON.stringify(record);
    } catch (e) {
      // Only a throwing getter or toJSON() in the fields gets here; keep the record, say why.
      line = JSON.stringify({
        time: record['time'],
        level: lvl,
        service,
        msg,
        ...(record['trace_id'] === undefined ? {} : { trace_id: record['trace_id'], span_id: record['span_id'] }),
        log_error: `fields could not be serialized: ${e instanceof Error ? e.message : String(e)}`,
      });
    }
    stream.write(`${line}\n`);
  };
  return {
    level,
    isEnabled: (l) => LogLevels[l] >= threshold,
    debug: (msg, fields) => write('debug', msg, fields),
    info: (msg, fields) => write('info', msg, fields),
    warn: (msg, fields) => write('warn', msg, fields),
    error: (msg, fields) => write('error', msg, fields),
    child: (fields) => makeLogger(service, level, { ...bound, ...fields }, stream, now),
  };
}
