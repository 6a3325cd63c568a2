/**
 * The simulated network programs: busybox `httpd`, `wget` and `nc`, and the servers of the images
 * the simulator knows (`nginx`, `redis-server`). They use real sockets on the pod IP (a loopback
 * address, see sim-runtime's README), so a prober or a test reaches them with a real HTTP or TCP
 * client. The container's `localhost` is its pod IP. Only loopback addresses are dialled: the
 * simulated node has no other network, and a name other than `localhost` does not resolve.
 */
import * as net from 'node:net';
import * as posix from 'node:path/posix';
import { SimFsError } from './container-fs.js';
import { defaultAction, raceKill, type Io, type ProcessEntry, type Program, type ProgramEnv } from './program.js';
import type { IncomingMessage, ServerResponse } from 'node:http';

// node:http through process.getBuiltinModule, not an ESM import: Node builds an imported builtin's
// namespace from every export, and node:http's lazy ones load fetch (undici) and http2 (~10 MiB of RSS).
const http = process.getBuiltinModule('node:http');

/** Listens on `host:port`; rejects with the socket error (EADDRINUSE, EACCES…). */
function listen(server: net.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Closes the server (and its connections) once `signal` aborts. */
function closeOn(server: net.Server, signal: AbortSignal, sockets: Set<net.Socket> = new Set()): void {
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const close = (): void => {
    server.close();
    for (const s of sockets) s.destroy();
    if (server instanceof http.Server) server.closeAllConnections();
  };
  if (signal.aborted) close();
  else signal.addEventListener('abort', close, { once: true });
}

/**
 * A daemonized server: it serves until the container stops or a signal (`killall NAME`) ends it,
 * listed in the container's process table meanwhile.
 */
function daemonize(server: net.Server, env: ProgramEnv, name: string): void {
  const stop = new AbortController();
  const entry: ProcessEntry = { name, signal: () => stop.abort() };
  env.container.processes.add(entry);
  server.on('close', () => env.container.processes.delete(entry));
  closeOn(server, AbortSignal.any([stop.signal, env.container.containerKill]));
}

/** `errno` text as busybox prints it. */
function socketError(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  switch (code) {
    case 'EADDRINUSE':
      return 'Address in use';
    case 'EACCES':
      return 'Permission denied';
    case 'ECONNREFUSED':
      return 'Connection refused';
    case 'EADDRNOTAVAIL':
      return 'Cannot assign requested address';
    default:
      return e instanceof Error ? e.message : String(e);
  }
}

/** The address a name means inside the container; undefined when the simulated node cannot reach it. */
function resolveHost(host: string, env: ProgramEnv): string | undefined {
  if (host === 'localhost' || host === '127.0.0.1' || host === '') return env.container.podIp;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) ? host : undefined;
}

/** Parses `[IP:]PORT`; IP is the container's own (its pod IP). */
function listenAddress(spec: string, env: ProgramEnv): { host: string; port: number } | undefined {
  const m = /^(?:(.*):)?(\d{1,5})$/.exec(spec);
  const port = Number(m?.[2]);
  if (m === null || !(port >= 0 && port <= 65535)) return undefined;
  const host = m[1] === undefined || m[1] === '0.0.0.0' ? env.container.podIp : resolveHost(m[1], env);
  return host === undefined ? undefined : { host, port };
}

/** Blocks until SIGKILL; as PID 1 the given signals end it with `code` (a server's graceful stop). */
async function serveUntilStopped(env: ProgramEnv, stopSignals: readonly string[], onStop: () => void, code = 0): Promise<number> {
  await raceKill(
    new Promise<void>((resolve) => {
      const router = env.router;
      if (router === undefined) return;
      router.handler = (sig) => {
        if (stopSignals.includes(sig)) resolve();
        else defaultAction(router, sig);
      };
    }),
    env.kill,
  ).finally(onStop);
  return code;
}

const MIME: Readonly<Record<string, string>> = {
  '.html': 'text/html',
  '.htm': 'text/html',
  '.txt': 'text/plain',
  '.css': 'text/css',
  '.js': 'application/javascript',
  '.json': 'application/json',
};

/** busybox's error page. */
function errorPage(res: ServerResponse, status: number, text: string): void {
  const body = `<HTML><HEAD><TITLE>${status} ${text}</TITLE></HEAD>\n<BODY><H1>${status} ${text}</H1>\n${status === 404 ? 'The requested URL was not found' : text}\n</BODY></HTML>\n`;
  res.writeHead(status, { 'Content-Type': 'text/html' }).end(body);
}

/**
 * `httpd [-f] [-v] [-p [IP:]PORT] [-h HOME]`: busybox's web server, serving files of the container
 * (a directory serves its `index.html`). Without `-f` it daemonizes: the command returns 0 and the
 * server runs until the container stops. Port 80 by default; `-h` defaults to the working directory.
 */
export const httpd: Program = async (argv, io, env) => {
  let foreground = false;
  let address = '80';
  let home = env.cwd;
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '-p' || a === '-h' || a === '-c' || a === '-u' || a === '-r') {
      const v = argv[++i];
      if (v === undefined) return usage(io, 'httpd', '[-ifv[v]] [-c CONFFILE] [-p [IP:]PORT] [-u USER[:GRP]] [-r REALM] [-h HOME]');
      if (a === '-p') address = v;
      if (a === '-h') home = env.fs.absolute(v, env.cwd);
    } else if (/^-[ifv]+$/.test(a)) foreground ||= a.includes('f');
    else return usage(io, 'httpd', '[-ifv[v]] [-c CONFFILE] [-p [IP:]PORT] [-u USER[:GRP]] [-r REALM] [-h HOME]');
  }
  const at = listenAddress(address, env);
  if (at === undefined) {
    io.stderr.write(`httpd: bad address '${address}'\n`);
    return 1;
  }
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent((req.url ?? '/').split('?')[0] ?? '/');
    if (req.method !== 'GET' && req.method !== 'HEAD') return errorPage(res, 501, 'Not Implemented');
    const file = posix.join(home, posix.normalize(url));
    const stat = env.fs.stat(file, '/');
    if (stat?.type === 'dir' && !url.endsWith('/')) return void res.writeHead(301, { Location: `${url}/` }).end();
    const target = stat?.type === 'dir' ? posix.join(file, 'index.html') : file;
    try {
      const body = env.fs.readFile(target, '/');
      res.writeHead(200, { 'Content-Type': MIME[posix.extname(target)] ?? 'application/octet-stream', 'Content-Length': Buffer.byteLength(body) });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch (e) {
      if (!(e instanceof SimFsError)) throw e;
      errorPage(res, 404, 'Not Found');
    }
  });
  try {
    await listen(server, at.host, at.port);
  } catch (e) {
    io.stderr.write(`httpd: bind: ${socketError(e)}\n`);
    return 1;
  }
  if (!foreground) {
    daemonize(server, env, 'httpd');
    return 0;
  }
  const stop = new AbortController();
  closeOn(server, AbortSignal.any([stop.signal, env.container.containerKill]));
  return serveUntilStopped(env, [], () => stop.abort());
};

/** `wget [-q] [-O FILE] [-T SEC] [-S] [--spider] URL`: fetches over HTTP from the pod network. */
export const wget: Program = async (argv, io, env) => {
  let quiet = false;
  let spider = false;
  let output: string | undefined;
  let timeoutS = 900;
  let url: string | undefined;
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '-O' || a === '-T') {
      const v = argv[++i];
      if (v === undefined) return usage(io, 'wget', '[-cqS] [--spider] [-O FILE] [-T SEC] URL...');
      if (a === '-O') output = v;
      else timeoutS = Number(v);
    } else if (a === '--spider') spider = true;
    else if (/^-[qS]+$/.test(a)) quiet ||= a.includes('q');
    else if (a.startsWith('-O')) output = a.slice(2);
    else if (a.startsWith('-T')) timeoutS = Number(a.slice(2));
    else url = a;
  }
  if (url === undefined) return usage(io, 'wget', '[-cqS] [--spider] [-O FILE] [-T SEC] URL...');
  const m = /^http:\/\/([^/:]+)(?::(\d+))?(\/.*)?$/.exec(/^[a-z]+:\/\//.test(url) ? url : `http://${url}`);
  if (m === null) {
    io.stderr.write(`wget: not an http or ftp url: ${url}\n`);
    return 1;
  }
  const [, host = '', portText, path = '/'] = m;
  const port = Number(portText ?? 80);
  const ip = resolveHost(host, env);
  if (ip === undefined) {
    io.stderr.write(`wget: bad address '${host}'\n`);
    return 1;
  }
  if (!quiet) io.stderr.write(`Connecting to ${host}${portText !== undefined ? `:${port}` : ''} (${ip}:${port})\n`);
  const result = await raceKill(
    new Promise<{ status: number; text: string; body: string } | { error: string }>((resolve) => {
      const req = http.get({ host: ip, port, path, headers: { Host: host, 'User-Agent': 'Wget' }, timeout: timeoutS * 1000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: res.statusMessage ?? '', body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (e) => resolve({ error: socketError(e) }));
      });
      req.on('timeout', () => {
        req.destroy();
        resolve({ error: 'download timed out' });
      });
      req.on('error', (e) => resolve({ error: `can't connect to remote host (${ip}): ${socketError(e)}` }));
      env.kill.addEventListener('abort', () => req.destroy(), { once: true });
    }),
    env.kill,
  );
  if ('error' in result) {
    io.stderr.write(`wget: ${result.error}\n`);
    return 1;
  }
  if (result.status < 200 || result.status > 299) {
    io.stderr.write(`wget: server returned error: HTTP/1.1 ${result.status} ${result.text}\n`);
    return 1;
  }
  if (spider) return 0;
  const file = output ?? (posix.basename(path) || 'index.html');
  if (file === '-') io.stdout.write(result.body);
  else {
    try {
      env.fs.writeFile(file, env.cwd, result.body, false);
    } catch {
      io.stderr.write(`wget: can't open '${file}': No such file or directory\n`);
      return 1;
    }
    if (!quiet) io.stderr.write(`saving to '${file}'\n`);
  }
  return 0;
};

/**
 * `nc -l [-k] -p PORT` listens (one connection, or every one with `-k`) and writes what it receives
 * to stdout; `nc [-z] [-w SEC] HOST PORT` connects (`-z`: only tests that the port answers),
 * writes its stdin (`< FILE`) and prints what comes back until the peer closes or `-w` passes.
 */
export const nc: Program = async (argv, io, env) => {
  let listenMode = false;
  let keep = false;
  let zero = false;
  let port: string | undefined;
  let waitS: number | undefined;
  const rest: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '-p' || a === '-w') {
      const v = argv[++i];
      if (v === undefined) return usage(io, 'nc', '[-iN] [-wN] [-l] [-p PORT] [-f FILE|IPADDR PORT] [-e PROG]');
      if (a === '-p') port = v;
      else waitS = Number(v);
    } else if (/^-[lkzvn]+$/.test(a)) {
      listenMode ||= a.includes('l');
      keep ||= a.includes('k');
      zero ||= a.includes('z');
    } else rest.push(a);
  }
  if (listenMode) {
    const at = listenAddress(port ?? rest[0] ?? '', env);
    if (at === undefined) return usage(io, 'nc', '-l -p PORT');
    const server = net.createServer();
    try {
      await listen(server, at.host, at.port);
    } catch (e) {
      io.stderr.write(`nc: bind: ${socketError(e)}\n`);
      return 1;
    }
    const done = new AbortController();
    closeOn(server, AbortSignal.any([done.signal, env.container.containerKill, env.kill]));
    try {
      await raceKill(
        new Promise<void>((resolve) => {
          server.on('connection', (s: net.Socket) => {
            if (!keep) server.close();
            s.on('data', (d: Buffer) => io.stdout.write(d.toString('utf8')));
            if (io.stdin !== undefined) s.end(io.stdin);
            s.on('close', () => {
              if (!keep) resolve();
            });
          });
        }),
        env.kill,
      );
    } finally {
      done.abort();
    }
    return 0;
  }
  const [host, portText] = rest;
  const ip = host === undefined ? undefined : resolveHost(host, env);
  if (host === undefined || portText === undefined) return usage(io, 'nc', '[-iN] [-wN] [-l] [-p PORT] [-f FILE|IPADDR PORT] [-e PROG]');
  if (ip === undefined) {
    io.stderr.write(`nc: bad address '${host}'\n`);
    return 1;
  }
  const status = await raceKill(
    new Promise<number>((resolve) => {
      const s = net.connect({ host: ip, port: Number(portText) });
      const timer = waitS !== undefined ? setTimeout(() => (s.destroy(), resolve(zero ? 1 : 0)), waitS * 1000) : undefined;
      const finish = (code: number): void => {
        clearTimeout(timer);
        resolve(code);
      };
      env.kill.addEventListener('abort', () => s.destroy(), { once: true });
      s.on('connect', () => {
        if (zero) {
          s.destroy();
          finish(0);
          return;
        }
        s.end(io.stdin ?? '');
      });
      s.on('data', (d: Buffer) => io.stdout.write(d.toString('utf8')));
      s.on('close', () => finish(0));
      s.on('error', (e) => {
        if (!zero) io.stderr.write(`nc: can't connect to remote host (${ip}): ${socketError(e)}\n`);
        finish(1);
      });
    }),
    env.kill,
  );
  return status;
};

const NGINX_INDEX = `<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>
</body>
</html>
`;

/** nginx's access log line (the default `combined` format plus `"$http_x_forwarded_for"`). */
function accessLog(req: IncomingMessage, status: number, bytes: number): string {
  const d = new Date();
  const month = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getUTCMonth()];
  const time = `${String(d.getUTCDate()).padStart(2, '0')}/${month}/${d.getUTCFullYear()}:${d.toISOString().slice(11, 19)} +0000`;
  return `${req.socket.remoteAddress ?? '-'} - - [${time}] "${req.method} ${req.url} HTTP/${req.httpVersion}" ${status} ${bytes} "-" "${req.headers['user-agent'] ?? '-'}" "-"\n`;
}

/**
 * `nginx [-g 'daemon off;']` of the nginx image: the default site on port 80 (its welcome page at
 * `/`, files under /usr/share/nginx/html, 404 otherwise), access log on stdout; SIGTERM, SIGINT and
 * SIGQUIT stop it with 0. Without `daemon off;` it daemonizes and the command returns 0.
 */
export const nginx: Program = async (argv, io, env) => {
  const daemon = !argv.some((a, i) => argv[i - 1] === '-g' && /daemon\s+off/.test(a));
  const server = http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0] ?? '/';
    let body: string | undefined;
    try {
      body = env.fs.readFile(posix.join('/usr/share/nginx/html', url.endsWith('/') ? `${url}index.html` : url), '/');
    } catch {
      body = url === '/' || url === '/index.html' ? NGINX_INDEX : undefined;
    }
    const status = body === undefined ? 404 : 200;
    const text =
      body ?? '<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';
    res.writeHead(status, { Server: 'nginx', 'Content-Type': 'text/html', 'Content-Length': Buffer.byteLength(text) }).end(req.method === 'HEAD' ? undefined : text);
    io.stdout.write(accessLog(req, status, Buffer.byteLength(text)));
  });
  try {
    await listen(server, env.container.podIp, 80);
  } catch (e) {
    io.stderr.write(`nginx: [emerg] bind() to 0.0.0.0:80 failed (${Math.abs((e as NodeJS.ErrnoException).errno ?? 0)}: ${socketError(e)})\n`);
    return 1;
  }
  io.stderr.write('nginx: [notice] start worker processes\n');
  if (daemon) {
    daemonize(server, env, 'nginx');
    return 0;
  }
  const stop = new AbortController();
  closeOn(server, AbortSignal.any([stop.signal, env.container.containerKill]));
  return serveUntilStopped(env, ['TERM', 'INT', 'QUIT'], () => stop.abort());
};

/**
 * `redis-server` of the redis image: RESP on port 6379 (`PING` → `+PONG`, `ECHO x`, `QUIT`; other
 * commands are an error); SIGTERM and SIGINT stop it with 0.
 */
export const redisServer: Program = async (_argv, io, env) => {
  const server = net.createServer((s) => {
    let buf = '';
    s.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, '');
        buf = buf.slice(nl + 1);
        if (line.startsWith('*') || line.startsWith('$')) continue; // RESP array/bulk headers: the words follow
        const [cmd = '', ...args] = line.trim().split(/\s+/);
        const upper = cmd.toUpperCase();
        if (upper === '') continue;
        if (upper === 'PING') s.write(args.length > 0 ? `$${Buffer.byteLength(args.join(' '))}\r\n${args.join(' ')}\r\n` : '+PONG\r\n');
        else if (upper === 'ECHO') s.write(`$${Buffer.byteLength(args.join(' '))}\r\n${args.join(' ')}\r\n`);
        else if (upper === 'QUIT') s.end('+OK\r\n');
        else if (/^[A-Z]+$/.test(upper)) s.write(`-ERR unknown command '${cmd}', with args beginning with: ${args.map((a) => `'${a}' `).join('')}\r\n`);
      }
    });
    s.on('error', () => undefined);
  });
  try {
    await listen(server, env.container.podIp, 6379);
  } catch (e) {
    io.stdout.write(`1:M # Warning: Could not create server TCP listening socket *:6379: bind: ${socketError(e)}\n`);
    return 1;
  }
  io.stdout.write('1:M * Ready to accept connections tcp\n');
  const stop = new AbortController();
  closeOn(server, AbortSignal.any([stop.signal, env.container.containerKill]));
  return serveUntilStopped(env, ['TERM', 'INT'], () => {
    stop.abort();
    io.stdout.write('1:M # Redis is now ready to exit, bye bye...\n');
  });
};

/** An executable of an image the simulator does not know: it runs until stopped (exit 0 on SIGTERM/SIGINT). */
export const placeholder: Program = async (_argv, _io, env) => serveUntilStopped(env, ['TERM', 'INT'], () => undefined);

function usage(io: Io, name: string, text: string): number {
  io.stderr.write(`BusyBox multi-call binary.\n\nUsage: ${name} ${text}\n`);
  return 1;
}
