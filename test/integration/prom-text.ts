/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), for tests: it rejects
 * what a lenient scraper would silently accept.
 *
 * Checked: `# HELP` / `# TYPE` syntax (at most one of each per family, TYPE before the family's
 * samples), metric and label name syntax, label value escapes (`\\`, `\"`, `\n` only), duplicate
 * label names, sample values (floats, `+Inf`, `-Inf`, `NaN` — any case, as Go's ParseFloat), that every sample belongs to a
 * declared family (`_bucket`/`_sum`/`_count` for histograms, `_sum`/`_count` for summaries), that a
 * family's samples are contiguous, no duplicate series, and for every histogram series: `le`
 * present and increasing, cumulative counts non-decreasing, a final `+Inf` bucket, `_count` equal to
 * it, and a `_sum`.
 */

/** One sample line. */
export interface PromSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
  readonly line: number;
}

/** A metric family: its TYPE, HELP and samples. */
export interface PromFamily {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help: string | undefined;
  readonly samples: PromSample[];
}

/** Thrown for any violation, naming the line. */
export class PromParseError extends Error {
  override readonly name = 'PromParseError';
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/** A float as Prometheus reads it (Go's `strconv.ParseFloat`: `NaN`, `Inf` in any case; prom-client writes `Nan`). */
function parseValue(raw: string, where: string): number {
  const lower = raw.toLowerCase();
  if (lower === '+inf' || lower === 'inf' || lower === '+infinity' || lower === 'infinity') return Number.POSITIVE_INFINITY;
  if (lower === '-inf' || lower === '-infinity') return Number.NEGATIVE_INFINITY;
  if (lower === 'nan') return Number.NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw)) throw new PromParseError(`${where}: '${raw}' is not a sample value`);
  return Number(raw);
}

/** Parses `{a="x",b="y"}` starting at `s[i] === '{'`; returns the labels and the index after `}`. */
function parseLabels(s: string, i: number, where: string): { labels: Record<string, string>; next: number } {
  const labels: Record<string, string> = {};
  i++; // '{'
  for (;;) {
    while (s[i] === ' ') i++;
    if (s[i] === '}') return { labels, next: i + 1 };
    const nameStart = i;
    while (i < s.length && /[a-zA-Z0-9_]/.test(s[i]!)) i++;
    const name = s.slice(nameStart, i);
    if (!LABEL_NAME.test(name)) throw new PromParseError(`${where}: bad label name '${name}'`);
    if (Object.hasOwn(labels, name)) throw new PromParseError(`${where}: duplicate label '${name}'`);
    if (s[i] !== '=' || s[i + 1] !== '"') throw new PromParseError(`${where}: expected =" after label '${name}'`);
    i += 2;
    let value = '';
    for (;;) {
      const c = s[i];
      if (c === undefined) throw new PromParseError(`${where}: unterminated label value of '${name}'`);
      if (c === '"') {
        i++;
        break;
      }
      if (c === '\\') {
        const e = s[i + 1];
        if (e === '\\') value += '\\';
        else if (e === '"') value += '"';
        else if (e === 'n') value += '\n';
        else throw new PromParseError(`${where}: bad escape '\\${e ?? ''}' in label '${name}'`);
        i += 2;
        continue;
      }
      if (c === '\n') throw new PromParseError(`${where}: raw newline in label '${name}'`);
      value += c;
      i++;
    }
    labels[name] = value;
    if (s[i] === ',') {
      i++;
      continue;
    }
    if (s[i] === '}') return { labels, next: i + 1 };
    throw new PromParseError(`${where}: expected , or } after label '${name}'`);
  }
}

/** The family a sample name belongs to, given the declared families. */
function familyOf(name: string, families: ReadonlyMap<string, PromFamily>): PromFamily | undefined {
  const direct = families.get(name);
  if (direct !== undefined && direct.type !== 'histogram') return direct;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue;
    const f = families.get(name.slice(0, -suffix.length));
    if (f === undefined) continue;
    if (f.type === 'histogram') return f;
    if (f.type === 'summary' && suffix !== '_bucket') return f;
  }
  return direct?.type === 'histogram' ? undefined : direct;
}

function seriesKey(labels: Readonly<Record<string, string>>, omit?: string): string {
  return JSON.stringify(
    Object.entries(labels)
      .filter(([k]) => k !== omit)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
}

function checkHistogram(f: PromFamily): void {
  const series = new Map<string, { buckets: PromSample[]; sum?: PromSample; count?: PromSample }>();
  const get = (k: string): { buckets: PromSample[]; sum?: PromSample; count?: PromSample } => {
    let e = series.get(k);
    if (e === undefined) series.set(k, (e = { buckets: [] }));
    return e;
  };
  for (const s of f.samples) {
    if (s.name === `${f.name}_bucket`) {
      if (s.labels['le'] === undefined) throw new PromParseError(`line ${s.line}: ${s.name} without le`);
      get(seriesKey(s.labels, 'le')).buckets.push(s);
    } else if (s.name === `${f.name}_sum`) get(seriesKey(s.labels)).sum = s;
    else if (s.name === `${f.name}_count`) get(seriesKey(s.labels)).count = s;
    else throw new PromParseError(`line ${s.line}: ${s.name} in histogram ${f.name}`);
  }
  for (const [k, e] of series) {
    const where = `histogram ${f.name}${k}`;
    if (e.buckets.length === 0) throw new PromParseError(`${where}: no buckets`);
    let lastLe = Number.NEGATIVE_INFINITY;
    let lastCount = 0;
    for (const b of e.buckets) {
      const le = parseValue(b.labels['le']!, `line ${b.line}`);
      if (!(le > lastLe)) throw new PromParseError(`line ${b.line}: ${where}: le ${b.labels['le']} not above the previous bucket`);
      if (b.value < lastCount) throw new PromParseError(`line ${b.line}: ${where}: bucket count decreases`);
      lastLe = le;
      lastCount = b.value;
    }
    if (lastLe !== Number.POSITIVE_INFINITY) throw new PromParseError(`${where}: the last bucket is not le="+Inf"`);
    if (e.count === undefined) throw new PromParseError(`${where}: no _count`);
    if (e.sum === undefined) throw new PromParseError(`${where}: no _sum`);
    if (e.count.value !== lastCount) throw new PromParseError(`${where}: _count ${e.count.value} != +Inf bucket ${lastCount}`);
  }
}

/** Parses a whole exposition; throws {@link PromParseError} on the first violation. */
export function parsePrometheusText(text: string): Map<string, PromFamily> {
  const families = new Map<string, PromFamily>();
  const helps = new Map<string, string>();
  const finished = new Set<string>();
  const seen = new Set<string>();
  let current: PromFamily | undefined;
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  lines.forEach((raw, index) => {
    const n = index + 1;
    const where = `line ${n}`;
    if (raw.trim() === '') return;
    if (raw.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(raw);
      if (m === null) return; // a plain comment
      const [, kind, name, rest] = m as unknown as [string, string, string, string | undefined];
      if (!METRIC_NAME.test(name)) throw new PromParseError(`${where}: bad metric name '${name}'`);
      if (kind === 'HELP') {
        if (helps.has(name)) throw new PromParseError(`${where}: second HELP for ${name}`);
        const help = (rest ?? '').replace(/\\(.)/g, (all, c: string) => {
          if (c === '\\') return '\\';
          if (c === 'n') return '\n';
          throw new PromParseError(`${where}: bad escape '${all}' in HELP of ${name}`);
        });
        helps.set(name, help);
        const f = families.get(name);
        if (f !== undefined) f.help = help;
        return;
      }
      const type = rest ?? '';
      if (!TYPES.has(type)) throw new PromParseError(`${where}: unknown TYPE '${type}' for ${name}`);
      if (families.has(name)) throw new PromParseError(`${where}: second TYPE for ${name}`);
      const f: PromFamily = { name, type: type as PromFamily['type'], help: helps.get(name), samples: [] };
      families.set(name, f);
      if (current !== undefined) finished.add(current.name);
      current = f;
      return;
    }
    let i = 0;
    while (i < raw.length && /[a-zA-Z0-9_:]/.test(raw[i]!)) i++;
    const name = raw.slice(0, i);
    if (!METRIC_NAME.test(name)) throw new PromParseError(`${where}: bad metric name in '${raw}'`);
    let labels: Record<string, string> = {};
    if (raw[i] === '{') ({ labels, next: i } = parseLabels(raw, i, where));
    if (raw[i] !== ' ') throw new PromParseError(`${where}: expected a space before the value in '${raw}'`);
    const parts = raw
      .slice(i + 1)
      .trim()
      .split(/ +/);
    if (parts.length < 1 || parts.length > 2) throw new PromParseError(`${where}: expected 'value [timestamp]' in '${raw}'`);
    const value = parseValue(parts[0]!, where);
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new PromParseError(`${where}: bad timestamp '${parts[1]}'`);
    const f = familyOf(name, families);
    if (f === undefined) throw new PromParseError(`${where}: sample ${name} has no TYPE declared before it`);
    if (f !== current) {
      throw new PromParseError(finished.has(f.name) ? `${where}: samples of ${f.name} are not contiguous` : `${where}: sample ${name} outside its family ${f.name}`);
    }
    const key = `${name}${seriesKey(labels)}`;
    if (seen.has(key)) throw new PromParseError(`${where}: duplicate series ${key}`);
    seen.add(key);
    f.samples.push({ name, labels, value, line: n });
  });
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

/** The `le` bounds (without +Inf) of a histogram family's first series. */
export function histogramBounds(f: PromFamily): number[] {
  const first = f.samples.find((s) => s.name === `${f.name}_bucket`);
  if (first === undefined) return [];
  const key = seriesKey(first.labels, 'le');
  return f.samples
    .filter((s) => s.name === `${f.name}_bucket` && seriesKey(s.labels, 'le') === key)
    .map((s) => parseValue(s.labels['le']!, `line ${s.line}`))
    .filter((le) => le !== Number.POSITIVE_INFINITY);
}

/** The sum of the values of samples named `name` whose labels include `match`. */
export function sumOf(families: ReadonlyMap<string, PromFamily>, name: string, match: Readonly<Record<string, string>> = {}): number {
  let total = 0;
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name !== name) continue;
      if (Object.entries(match).every(([k, v]) => s.labels[k] === v)) total += s.value;
    }
  }
  return total;
}
