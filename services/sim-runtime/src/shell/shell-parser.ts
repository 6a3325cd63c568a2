/**
 * Parser for the POSIX-sh subset the simulator understands (see services/sim-runtime/README.md):
 * lists with `;` `&` `&&` `||` and newlines, `!`, `if/elif/else`, `while`, `until`, `for`, `{ …; }`,
 * `( … )`, assignments, single/double quotes, backslashes, `$VAR` `${VAR}` `$?` `$$` `$!` `$#` `$0-9`
 * `$@`, `$(…)`, backticks, `$((…))`, and the redirections `>` `>>` `<` `N>` `N>&M`. Pipes and `case`
 * are rejected with a clear syntax error rather than misread.
 *
 * One file on purpose: a recursive-descent parser is one grammar; splitting it would split mutually recursive rules.
 */

/** A piece of a word, before expansion. */
export type WordPart =
  | { kind: 'lit'; text: string; quoted: boolean }
  | { kind: 'var'; name: string; quoted: boolean }
  | { kind: 'cmd'; source: string; quoted: boolean }
  | { kind: 'arith'; source: string; quoted: boolean };

/** A shell word: its parts and its source text. */
export interface Word {
  parts: WordPart[];
  raw: string;
}

/** A redirection: `fd op target`, where `op` is `>` (truncate), `>>`, `<` or `>&` (dup to fd `target`). */
export interface Redirect {
  fd: number;
  op: '>' | '>>' | '<' | '>&';
  target: Word;
}

export interface SimpleCommand {
  type: 'simple';
  assigns: { name: string; value: Word }[];
  words: Word[];
  redirects: Redirect[];
}

export interface IfCommand {
  type: 'if';
  clauses: { cond: List; body: List }[];
  otherwise: List | undefined;
  redirects: Redirect[];
}

export interface LoopCommand {
  type: 'loop';
  until: boolean;
  cond: List;
  body: List;
  redirects: Redirect[];
}

export interface ForCommand {
  type: 'for';
  name: string;
  items: Word[] | undefined;
  body: List;
  redirects: Redirect[];
}

export interface GroupCommand {
  type: 'group';
  subshell: boolean;
  body: List;
  redirects: Redirect[];
}

export type Command = SimpleCommand | IfCommand | LoopCommand | ForCommand | GroupCommand;

/** `[!] command`. */
export interface Pipeline {
  negate: boolean;
  command: Command;
}

/** `pipeline (&& pipeline | || pipeline)*`. */
export interface AndOr {
  first: Pipeline;
  rest: { op: '&&' | '||'; pipeline: Pipeline }[];
}

/** A sequence of and-or lists, each run in the foreground or (`&`) in the background. */
export interface List {
  items: { andOr: AndOr; background: boolean }[];
}

/** A script that is not valid (or not supported) sh. The message reads like busybox ash's. */
export class ShellSyntaxError extends Error {
  override readonly name = 'ShellSyntaxError';
}

type Token =
  { t: 'word'; word: Word } | { t: 'op'; op: ';' | '&' | '&&' | '||' | '|' | '(' | ')' | '\n' | ';;' } | { t: 'redir'; fd: number; op: '>' | '>>' | '<' | '>&' } | { t: 'eof' };

const RESERVED = new Set(['if', 'then', 'elif', 'else', 'fi', 'while', 'until', 'do', 'done', 'for', 'in', 'case', 'esac', '{', '}', '!']);

/** Finds the index just after the `)` that closes a `$(` whose body starts at `i`. */
function scanParen(src: string, i: number, depth = 1): number {
  let quote: string | undefined;
  for (; i < src.length; i++) {
    const c = src[i];
    if (quote !== undefined) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === '\\') i++;
    else if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === '(') depth++;
    else if (c === ')') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  throw new ShellSyntaxError('syntax error: unterminated $(');
}

/** Reads a `$…` expansion starting at `src[i] === '$'`; returns the part (or undefined for a lone `$`) and the next index. */
function readDollar(src: string, i: number, quoted: boolean): { part: WordPart | undefined; next: number } {
  const c = src[i + 1];
  if (c === '(') {
    if (src[i + 2] === '(') {
      const end = scanParen(src, i + 3, 2);
      if (src[end - 2] !== ')') throw new ShellSyntaxError('syntax error: bad arithmetic $((…))');
      return { part: { kind: 'arith', source: src.slice(i + 3, end - 2), quoted }, next: end };
    }
    const end = scanParen(src, i + 2);
    return { part: { kind: 'cmd', source: src.slice(i + 2, end - 1), quoted }, next: end };
  }
  if (c === '{') {
    const end = src.indexOf('}', i + 2);
    if (end < 0) throw new ShellSyntaxError('syntax error: missing }');
    const name = src.slice(i + 2, end);
    if (!/^([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[?$!#@*])$/.test(name)) {
      throw new ShellSyntaxError(`syntax error: bad substitution \${${name}} (sim-runtime supports plain \${NAME} only)`);
    }
    return { part: { kind: 'var', name, quoted }, next: end + 1 };
  }
  if (c !== undefined && /[?$!#@*0-9]/.test(c)) return { part: { kind: 'var', name: c, quoted }, next: i + 2 };
  const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i + 1));
  if (m !== null) return { part: { kind: 'var', name: m[0], quoted }, next: i + 1 + m[0].length };
  return { part: undefined, next: i + 1 };
}

/** Splits a script into tokens. */
export function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i] as string;
    if (c === ' ' || c === '\t') {
      i++;
      continue;
    }
    if (c === '\\' && src[i + 1] === '\n') {
      i += 2;
      continue;
    }
    if (c === '#') {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    if (c === '\n') {
      tokens.push({ t: 'op', op: '\n' });
      i++;
      continue;
    }
    const two = src.slice(i, i + 2);
    if (two === '&&' || two === '||' || two === ';;') {
      tokens.push({ t: 'op', op: two });
      i += 2;
      continue;
    }
    if (c === ';' || c === '&' || c === '|' || c === '(' || c === ')') {
      tokens.push({ t: 'op', op: c });
      i++;
      continue;
    }
    if (c === '>' || c === '<') {
      i = readRedirect(src, i, c === '>' ? 1 : 0, tokens);
      continue;
    }
    // A word.
    const parts: WordPart[] = [];
    const start = i;
    let lit = '';
    const flush = (quoted: boolean): void => {
      if (lit !== '') parts.push({ kind: 'lit', text: lit, quoted });
      lit = '';
    };
    while (i < src.length) {
      const ch = src[i] as string;
      if (' \t\n;&|()<>'.includes(ch)) break;
      if (ch === '\\') {
        flush(false);
        if (i + 1 < src.length) parts.push({ kind: 'lit', text: src[i + 1] as string, quoted: true });
        i += 2;
      } else if (ch === "'") {
        flush(false);
        const end = src.indexOf("'", i + 1);
        if (end < 0) throw new ShellSyntaxError('syntax error: unterminated quoted string');
        parts.push({ kind: 'lit', text: src.slice(i + 1, end), quoted: true });
        i = end + 1;
      } else if (ch === '"') {
        flush(false);
        i = readDoubleQuoted(src, i + 1, parts);
      } else if (ch === '`') {
        flush(false);
        const end = src.indexOf('`', i + 1);
        if (end < 0) throw new ShellSyntaxError('syntax error: unterminated `');
        parts.push({ kind: 'cmd', source: src.slice(i + 1, end), quoted: false });
        i = end + 1;
      } else if (ch === '$') {
        const { part, next } = readDollar(src, i, false);
        if (part === undefined) lit += '$';
        else {
          flush(false);
          parts.push(part);
        }
        i = next;
      } else {
        lit += ch;
        i++;
      }
    }
    flush(false);
    const raw = src.slice(start, i);
    // `2>file`: a word of digits right before a redirection operator is its fd.
    if (/^[0-9]$/.test(raw) && (src[i] === '>' || src[i] === '<')) {
      i = readRedirect(src, i, Number(raw), tokens);
      continue;
    }
    tokens.push({ t: 'word', word: { parts, raw } });
  }
  tokens.push({ t: 'eof' });
  return tokens;
}

function readRedirect(src: string, i: number, fd: number, tokens: Token[]): number {
  if (src[i] === '<') {
    tokens.push({ t: 'redir', fd, op: '<' });
    return i + 1;
  }
  if (src[i + 1] === '>') {
    tokens.push({ t: 'redir', fd, op: '>>' });
    return i + 2;
  }
  if (src[i + 1] === '&') {
    tokens.push({ t: 'redir', fd, op: '>&' });
    return i + 2;
  }
  if (src[i + 1] === '|') {
    tokens.push({ t: 'redir', fd, op: '>' });
    return i + 2;
  }
  tokens.push({ t: 'redir', fd, op: '>' });
  return i + 1;
}

function readDoubleQuoted(src: string, i: number, parts: WordPart[]): number {
  let lit = '';
  let sawAny = false;
  const flush = (): void => {
    if (lit !== '') parts.push({ kind: 'lit', text: lit, quoted: true });
    lit = '';
  };
  while (i < src.length) {
    const ch = src[i] as string;
    if (ch === '"') {
      flush();
      // `""` still makes an (empty) field.
      if (!sawAny) parts.push({ kind: 'lit', text: '', quoted: true });
      return i + 1;
    }
    sawAny = true;
    if (ch === '\\' && i + 1 < src.length && '$`"\\\n'.includes(src[i + 1] as string)) {
      if (src[i + 1] !== '\n') lit += src[i + 1];
      i += 2;
    } else if (ch === '$') {
      const { part, next } = readDollar(src, i, true);
      if (part === undefined) lit += '$';
      else {
        flush();
        parts.push(part);
      }
      i = next;
    } else if (ch === '`') {
      flush();
      const end = src.indexOf('`', i + 1);
      if (end < 0) throw new ShellSyntaxError('syntax error: unterminated `');
      parts.push({ kind: 'cmd', source: src.slice(i + 1, end), quoted: true });
      i = end + 1;
    } else {
      lit += ch;
      i++;
    }
  }
  throw new ShellSyntaxError('syntax error: unterminated quoted string');
}

/** The word's text if it is one plain unquoted literal (a candidate reserved word), else undefined. */
function plainText(word: Word): string | undefined {
  const [only, ...more] = word.parts;
  return only !== undefined && more.length === 0 && only.kind === 'lit' && !only.quoted ? only.text : undefined;
}

class Parser {
  #pos = 0;
  constructor(private readonly tokens: Token[]) {}

  #peek(): Token {
    return this.tokens[this.#pos] ?? { t: 'eof' };
  }

  #next(): Token {
    const tok = this.#peek();
    this.#pos++;
    return tok;
  }

  #isOp(op: string): boolean {
    const tok = this.#peek();
    return tok.t === 'op' && tok.op === op;
  }

  #isKeyword(kw: string): boolean {
    const tok = this.#peek();
    return tok.t === 'word' && plainText(tok.word) === kw;
  }

  #describe(tok: Token): string {
    if (tok.t === 'eof') return 'end of file';
    if (tok.t === 'op') return tok.op === '\n' ? 'newline' : `"${tok.op}"`;
    if (tok.t === 'redir') return `"${tok.op}"`;
    return `"${tok.word.raw}"`;
  }

  #unexpected(): never {
    throw new ShellSyntaxError(`syntax error: unexpected ${this.#describe(this.#peek())}`);
  }

  #expectKeyword(kw: string): void {
    if (!this.#isKeyword(kw)) this.#unexpected();
    this.#pos++;
  }

  #skipNewlines(): void {
    while (this.#isOp('\n')) this.#pos++;
  }

  /** True when the next token ends a compound list (a closing keyword, `)` or EOF). */
  #atListEnd(terminators: ReadonlySet<string>): boolean {
    const tok = this.#peek();
    if (tok.t === 'eof') return true;
    if (tok.t === 'op') return tok.op === ')' || tok.op === ';;';
    if (tok.t === 'word') {
      const text = plainText(tok.word);
      return text !== undefined && terminators.has(text);
    }
    return false;
  }

  parseProgram(): List {
    const list = this.parseList(new Set());
    if (this.#peek().t !== 'eof') this.#unexpected();
    return list;
  }

  parseList(terminators: ReadonlySet<string>): List {
    const items: List['items'] = [];
    this.#skipNewlines();
    while (!this.#atListEnd(terminators)) {
      const andOr = this.parseAndOr();
      let background = false;
      if (this.#isOp('&')) {
        background = true;
        this.#pos++;
      } else if (this.#isOp(';')) {
        this.#pos++;
      } else if (!this.#isOp('\n') && !this.#atListEnd(terminators)) {
        this.#unexpected();
      }
      items.push({ andOr, background });
      this.#skipNewlines();
    }
    return { items };
  }

  parseAndOr(): AndOr {
    const first = this.parsePipeline();
    const rest: AndOr['rest'] = [];
    for (;;) {
      const tok = this.#peek();
      if (tok.t !== 'op' || (tok.op !== '&&' && tok.op !== '||')) break;
      this.#pos++;
      this.#skipNewlines();
      rest.push({ op: tok.op, pipeline: this.parsePipeline() });
    }
    return { first, rest };
  }

  parsePipeline(): Pipeline {
    let negate = false;
    if (this.#isKeyword('!')) {
      negate = true;
      this.#pos++;
    }
    const command = this.parseCommand();
    if (this.#isOp('|')) throw new ShellSyntaxError('syntax error: sim-runtime does not support pipes ("|")');
    return { negate, command };
  }

  parseCommand(): Command {
    const tok = this.#peek();
    if (tok.t === 'op' && tok.op === '(') {
      this.#pos++;
      const body = this.parseList(new Set());
      if (!this.#isOp(')')) this.#unexpected();
      this.#pos++;
      return { type: 'group', subshell: true, body, redirects: this.parseRedirects() };
    }
    const kw = tok.t === 'word' ? plainText(tok.word) : undefined;
    switch (kw) {
      case 'if':
        return this.parseIf();
      case 'while':
      case 'until':
        return this.parseLoop(kw === 'until');
      case 'for':
        return this.parseFor();
      case '{': {
        this.#pos++;
        const body = this.parseList(new Set(['}']));
        this.#expectKeyword('}');
        return { type: 'group', subshell: false, body, redirects: this.parseRedirects() };
      }
      case 'case':
        throw new ShellSyntaxError('syntax error: sim-runtime does not support "case"');
      case 'then':
      case 'elif':
      case 'else':
      case 'fi':
      case 'do':
      case 'done':
      case '}':
        return this.#unexpected();
      default: // any other word (or an operator) starts a simple command
        break;
    }
    return this.parseSimple();
  }

  parseIf(): IfCommand {
    this.#expectKeyword('if');
    const clauses: IfCommand['clauses'] = [];
    let otherwise: List | undefined;
    const condEnd = new Set(['then']);
    const bodyEnd = new Set(['elif', 'else', 'fi']);
    for (;;) {
      const cond = this.parseList(condEnd);
      this.#expectKeyword('then');
      const body = this.parseList(bodyEnd);
      clauses.push({ cond, body });
      if (this.#isKeyword('elif')) {
        this.#pos++;
        continue;
      }
      if (this.#isKeyword('else')) {
        this.#pos++;
        otherwise = this.parseList(new Set(['fi']));
      }
      this.#expectKeyword('fi');
      break;
    }
    return { type: 'if', clauses, otherwise, redirects: this.parseRedirects() };
  }

  parseLoop(until: boolean): LoopCommand {
    this.#pos++;
    const cond = this.parseList(new Set(['do']));
    this.#expectKeyword('do');
    const body = this.parseList(new Set(['done']));
    this.#expectKeyword('done');
    return { type: 'loop', until, cond, body, redirects: this.parseRedirects() };
  }

  parseFor(): ForCommand {
    this.#expectKeyword('for');
    const nameTok = this.#next();
    const name = nameTok.t === 'word' ? plainText(nameTok.word) : undefined;
    if (name === undefined || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      this.#pos--;
      this.#unexpected();
    }
    let items: Word[] | undefined;
    this.#skipNewlines();
    if (this.#isKeyword('in')) {
      this.#pos++;
      items = [];
      for (let tok = this.#peek(); tok.t === 'word'; tok = this.#peek()) {
        items.push(tok.word);
        this.#pos++;
      }
    }
    if (this.#isOp(';') || this.#isOp('\n')) this.#pos++;
    this.#skipNewlines();
    this.#expectKeyword('do');
    const body = this.parseList(new Set(['done']));
    this.#expectKeyword('done');
    return { type: 'for', name, items, body, redirects: this.parseRedirects() };
  }

  parseRedirects(): Redirect[] {
    const redirects: Redirect[] = [];
    for (let tok = this.#peek(); tok.t === 'redir'; tok = this.#peek()) {
      this.#pos++;
      const target = this.#next();
      if (target.t !== 'word') {
        this.#pos--;
        this.#unexpected();
      }
      redirects.push({ fd: tok.fd, op: tok.op, target: target.word });
    }
    return redirects;
  }

  parseSimple(): SimpleCommand {
    const cmd: SimpleCommand = { type: 'simple', assigns: [], words: [], redirects: [] };
    for (;;) {
      const tok = this.#peek();
      if (tok.t === 'redir') {
        cmd.redirects.push(...this.parseRedirects());
        continue;
      }
      if (tok.t !== 'word') break;
      const first = tok.word.parts[0];
      const m = cmd.words.length === 0 && first?.kind === 'lit' && !first.quoted ? /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(first.text) : null;
      if (m !== null && first?.kind === 'lit') {
        const rest = first.text.slice(m[0].length);
        const valueParts: WordPart[] = rest === '' ? [] : [{ kind: 'lit', text: rest, quoted: false }];
        valueParts.push(...tok.word.parts.slice(1));
        cmd.assigns.push({ name: m[1] as string, value: { parts: valueParts, raw: tok.word.raw.slice(m[0].length) } });
      } else {
        cmd.words.push(tok.word);
      }
      this.#pos++;
    }
    if (cmd.words.length === 0 && cmd.assigns.length === 0 && cmd.redirects.length === 0) this.#unexpected();
    return cmd;
  }
}

/** Parses a script (once per source: the tree is cached, frozen and shared). Throws {@link ShellSyntaxError}. */
export function parseScript(src: string): List {
  const cached = parsed.get(src);
  if (cached !== undefined) {
    // Most recently used last, so the oldest entry is the one dropped when full.
    parsed.delete(src);
    parsed.set(src, cached);
    return cached;
  }
  const list = deepFreeze(new Parser(tokenize(src)).parseProgram());
  parsed.set(src, list);
  if (parsed.size > MAX_PARSED_SCRIPTS) {
    const oldest = parsed.keys().next().value;
    if (oldest !== undefined) parsed.delete(oldest);
  }
  return list;
}

/** At most this many scripts' syntax trees are kept (every container of a pod spec runs the same few). */
export const MAX_PARSED_SCRIPTS = 512;

/**
 * Parsed scripts by source: a container's command (and a trap's action) is parsed once, not at
 * every start. The trees are frozen, as they are shared by every run of the script; a syntax error
 * is not kept (it is thrown again).
 */
const parsed = new Map<string, List>();

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/** True for the words the parser treats as reserved in command position. */
export function isReservedWord(text: string): boolean {
  return RESERVED.has(text);
}
