/**
 * Label and field selectors, as list and watch requests carry them.
 *
 * Models k8s.io/apimachinery/pkg/labels/selector.go (Parse: =, ==, !=, in, notin, exists, !exists)
 * and pkg/fields/selector.go (ParseSelector: =, ==, !=, comma-separated).
 */
import { ApiError } from '../http/api-errors.js';

/** A compiled selector: true when the object's labels (or fields) match. */
export type Matcher = (values: Readonly<Record<string, string | undefined>>) => boolean;

const matchAll: Matcher = () => true;

/** Splits on commas outside parentheses. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== '');
}

/** Parses a label selector; throws 400 BadRequest naming the bad term. */
export function parseLabelSelector(text: string | null): Matcher {
  if (text === null || text.trim() === '') return matchAll;
  const terms = splitTerms(text).map((term): Matcher => {
    let m = /^([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (m !== null) {
      const key = m[1] as string;
      const set = new Set((m[3] as string).split(',').map((v) => v.trim()));
      return m[2] === 'in' ? (l) => l[key] !== undefined && set.has(l[key]) : (l) => l[key] === undefined || !set.has(l[key]);
    }
    m = /^([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([A-Za-z0-9_.-]*)$/.exec(term);
    if (m !== null) {
      const [, key, op, value] = m as unknown as [string, string, string, string];
      return op === '!=' ? (l) => l[key] !== value : (l) => l[key] === value;
    }
    m = /^(!?)([A-Za-z0-9_./-]+)$/.exec(term);
    if (m !== null) {
      const key = m[2] as string;
      return m[1] === '!' ? (l) => l[key] === undefined : (l) => l[key] !== undefined;
    }
    throw ApiError.badRequest(`unable to parse requirement: ${JSON.stringify(term)}: invalid label selector`);
  });
  return (l) => terms.every((t) => t(l));
}

/**
 * Parses a field selector over the fields the resource supports; an unsupported field is 400
 * `field label not supported: <f>`, as the API server answers.
 */
export function parseFieldSelector(text: string | null, supported: ReadonlySet<string>): Matcher {
  if (text === null || text.trim() === '') return matchAll;
  const terms = splitTerms(text).map((term): Matcher => {
    const m = /^([A-Za-z0-9_.[\]-]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (m === null) throw ApiError.badRequest(`invalid selector: '${text}'; can't understand '${term}'`);
    const [, field, op, value] = m as unknown as [string, string, string, string];
    if (!supported.has(field)) throw ApiError.badRequest(`field label not supported: ${field}`);
    return op === '!=' ? (f) => (f[field] ?? '') !== value : (f) => (f[field] ?? '') === value;
  });
  return (f) => terms.every((t) => t(f));
}
