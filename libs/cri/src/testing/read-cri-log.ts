/**
 * readCriLog(): parses a CRI container log file (what the kubelet's log reader does), for tests.
 */
import { readFileSync } from 'node:fs';

/** One record of a CRI log file. */
export interface CriLogRecord {
  /** RFC 3339 timestamp as written. */
  time: string;
  stream: 'stdout' | 'stderr';
  /** `F` (full line) or `P` (partial). */
  tag: 'F' | 'P';
  text: string;
}

const LINE = /^(\S+) (stdout|stderr) ([FP]) (.*)$/;

/** Parses CRI log text. Throws on a line that is not in the CRI format. */
export function parseCriLog(text: string): CriLogRecord[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      const m = LINE.exec(line);
      if (m === null) throw new Error(`not a CRI log line: ${JSON.stringify(line)}`);
      return { time: m[1] as string, stream: m[2] as 'stdout' | 'stderr', tag: m[3] as 'F' | 'P', text: m[4] as string };
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
