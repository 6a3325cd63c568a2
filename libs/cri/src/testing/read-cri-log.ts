/**
 * readCriLog(): the records of a CRI container log file, for tests (the parsing is the shipped
 * {@link parseCriLogLine}).
 */
import { readFileSync } from 'node:fs';
import { parseCriLogLine } from '../cri-log.js';

/** One record of a CRI log file. */
export interface CriLogRecord {
  /** RFC 3339 timestamp as written. */
  time: string;
  stream: 'stdout' | 'stderr';
  /** `F` (full line) or `P` (partial). */
  tag: 'F' | 'P';
  text: string;
}

/** Parses CRI log text. Throws on a line that is not in the CRI format. */
export function parseCriLog(text: string): CriLogRecord[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      const r = parseCriLogLine(line);
      if (r === undefined) throw new Error(`not a CRI log line: ${JSON.stringify(line)}`);
      return { time: r.time, stream: r.stream, tag: r.partial ? 'P' : 'F', text: r.content.toString('utf8') };
    });
}

/** Reads and parses a CRI log file; a missing file reads as no records. */
export function readCriLog(path: string): CriLogRecord[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  return parseCriLog(text);
}
