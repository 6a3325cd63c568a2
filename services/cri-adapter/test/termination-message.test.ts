/**
 * Termination messages: the file made for each container instance and reading the message of an
 * exited container (kuberuntime_container_test.go TestGetTerminationMessage / readLastStringFromContainerLogs
 * cases), on real files.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ContainerStatus } from '@splitlet/cri';
import { createLogger } from '@splitlet/telemetry';
import { makeTempDir, type TempDir } from '@splitlet/testkit';
import { createNodeFiles } from '../src/adapters/node-files.js';
import { containerInfoFrom, newContainerAnnotations } from '../src/kuberuntime/labels.js';
import {
  exitedContainerMessage,
  lastStringFromCriLog,
  makeTerminationMessageMount,
  MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH,
  MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH,
  readLastStringFromContainerLogs,
} from '../src/kuberuntime/termination-message.js';
import type { NodeFiles } from '../src/ports.js';
import { aPod } from './fixtures.js';

const logged: string[] = [];
const logger = createLogger({ service: 'test', level: 'error', stream: { write: (line: string) => logged.push(line) } });
const files = createNodeFiles('');
const TS = '2024-05-01T10:00:00.123456789Z';
const cri = (stream: 'stdout' | 'stderr', tag: 'F' | 'P', text: string): string => `${TS} ${stream} ${tag} ${text}\n`;

/** The node files, counting (and optionally refusing) log reads. */
function countingFiles(): { files: NodeFiles; logReads: () => number } {
  let n = 0;
  return {
    files: {
      ...files,
      readLogTail: (p, lines) => {
        n++;
        return files.readLogTail(p, lines);
      },
    },
    logReads: () => n,
  };
}

describe('termination messages', () => {
  let dir: TempDir;
  let seq = 0;
  before(async () => {
    dir = await makeTempDir('termination-message-');
  });
  after(async () => {
    await dir.cleanup();
  });

  /** An exited container's CRI status with its termination file (content given, or none) and log. */
  async function exited(opts: { file?: string | Buffer; log?: string; exitCode?: number; reason?: string; message?: string; path?: string }): Promise<ContainerStatus> {
    const n = ++seq;
    const hostPath = join(dir.path, `term-${n}`);
    if (opts.file !== undefined) await writeFile(hostPath, opts.file);
    const logPath = join(dir.path, `${n}.log`);
    if (opts.log !== undefined) await writeFile(logPath, opts.log);
    return {
      id: `c${n}`,
      metadata: { name: 'main', attempt: 0 },
      state: 'CONTAINER_EXITED',
      createdAt: '1',
      startedAt: '2',
      finishedAt: '3',
      exitCode: opts.exitCode ?? 1,
      image: null,
      imageRef: '',
      reason: opts.reason ?? ((opts.exitCode ?? 1) === 0 ? 'Completed' : 'Error'),
      message: opts.message ?? '',
      labels: {},
      annotations: {},
      mounts: [
        { containerPath: '/data', hostPath: dir.path, readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE', recursiveReadOnly: false, image: null },
        {
          containerPath: opts.path ?? '/dev/termination-log',
          hostPath,
          readonly: false,
          selinuxRelabel: false,
          propagation: 'PROPAGATION_PRIVATE',
          recursiveReadOnly: false,
          image: null,
        },
      ],
      logPath,
      resources: null,
      imageId: '',
    };
  }
  const FILE = { path: '/dev/termination-log', policy: 'File' };
  const FALLBACK = { path: '/dev/termination-log', policy: 'FallbackToLogsOnError' };
  const LOG = cri('stdout', 'F', 'line one') + cri('stderr', 'F', 'oops');

  describe('exitedContainerMessage', () => {
    it('is the file content', async () => {
      assert.equal(await exitedContainerMessage(files, await exited({ file: 'bye from c\n', exitCode: 3 }), FILE), 'bye from c\n');
    });

    it('is the file content even with FallbackToLogsOnError', async () => {
      const c = countingFiles();
      assert.equal(await exitedContainerMessage(c.files, await exited({ file: 'from file', log: LOG }), FALLBACK), 'from file');
      assert.equal(c.logReads(), 0);
    });

    it('falls back to the log tail (stdout and stderr) for an empty file, a non-zero exit and FallbackToLogsOnError', async () => {
      assert.equal(await exitedContainerMessage(files, await exited({ file: '', log: LOG }), FALLBACK), 'line one\noops\n');
    });

    it('falls back to the log tail when the file is missing', async () => {
      assert.equal(await exitedContainerMessage(files, await exited({ log: LOG }), FALLBACK), 'line one\noops\n');
    });

    it('is empty for a missing file with policy File', async () => {
      assert.equal(await exitedContainerMessage(files, await exited({ log: LOG }), FILE), '');
    });

    it('never reads the logs with policy File', async () => {
      const c = countingFiles();
      assert.equal(await exitedContainerMessage(c.files, await exited({ file: '', log: LOG }), FILE), '');
      assert.equal(c.logReads(), 0);
    });

    it('does not fall back for exit code 0, nor for ContainerCannotRun', async () => {
      const c = countingFiles();
      assert.equal(await exitedContainerMessage(c.files, await exited({ file: '', log: LOG, exitCode: 0 }), FALLBACK), '');
      assert.equal(await exitedContainerMessage(c.files, await exited({ file: '', log: LOG, reason: 'ContainerCannotRun', exitCode: 128 }), FALLBACK), '');
      assert.equal(c.logReads(), 0);
    });

    it('keeps the last 4096 bytes of a longer file', async () => {
      const content = `${'a'.repeat(100)}${'b'.repeat(MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH - 1)}z`;
      const msg = await exitedContainerMessage(files, await exited({ file: content }), FILE);
      assert.equal(msg.length, MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH);
      assert.equal(msg, content.slice(-MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH));
    });

    it('appends the message to the runtime message with ": "', async () => {
      assert.equal(await exitedContainerMessage(files, await exited({ file: 'last words', reason: 'OOMKilled', message: 'runtime says' }), FILE), 'runtime says: last words');
      assert.equal(await exitedContainerMessage(files, await exited({ file: '', message: 'runtime says' }), FILE), 'runtime says');
    });

    it('reads the mount at the annotated path only', async () => {
      assert.equal(await exitedContainerMessage(files, await exited({ file: 'elsewhere', path: '/tmp/msg' }), FILE), '');
      assert.equal(await exitedContainerMessage(files, await exited({ file: 'elsewhere', path: '/tmp/msg' }), { path: '/tmp/msg', policy: 'File' }), 'elsewhere');
      assert.equal(await exitedContainerMessage(files, await exited({ file: 'x' }), { path: '', policy: 'File' }), '', 'no path, no message');
    });

    it('says why a file cannot be read, without falling back', async () => {
      const st = await exited({ log: LOG });
      const hostPath = st.mounts[1]!.hostPath;
      await mkdir(hostPath);
      const c = countingFiles();
      assert.equal(await exitedContainerMessage(c.files, st, FALLBACK), `Error on reading termination log ${hostPath}: read ${hostPath}: is a directory`);
      assert.equal(c.logReads(), 0);
    });

    it('says why the logs cannot be read', async () => {
      const st = await exited({ file: '' });
      assert.equal(
        await exitedContainerMessage(files, st, FALLBACK),
        `Error on reading termination message from logs: failed to try resolving symlinks in path ${JSON.stringify(st.logPath)}: lstat ${st.logPath}: no such file or directory`,
      );
    });

    it('leaves a running container alone', async () => {
      const st = { ...(await exited({ file: 'x' })), state: 'CONTAINER_RUNNING' as const, message: '' };
      assert.equal(await exitedContainerMessage(files, st, FILE), '');
    });
  });

  describe('the log tail', () => {
    it('is the last 80 lines of output', async () => {
      const log = Array.from({ length: 100 }, (_, i) => cri('stdout', 'F', `line ${i}`)).join('');
      const logPath = join(dir.path, 'hundred.log');
      await writeFile(logPath, log);
      const want = Array.from({ length: 80 }, (_, i) => `line ${i + 20}\n`).join('');
      assert.equal(await readLastStringFromContainerLogs(files, logPath), want);
    });

    it('is at most the last 2048 bytes of output, read across 1 KiB blocks', async () => {
      const long = Array.from({ length: 60 }, (_, i) => cri('stderr', 'F', `${String(i).padStart(2, '0')}${'x'.repeat(60)}`)).join('');
      const logPath = join(dir.path, 'long.log');
      await writeFile(logPath, long);
      const all = Array.from({ length: 60 }, (_, i) => `${String(i).padStart(2, '0')}${'x'.repeat(60)}\n`).join('');
      const got = await readLastStringFromContainerLogs(files, logPath);
      assert.equal(Buffer.byteLength(got), MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH);
      assert.equal(got, all.slice(-MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH));
    });

    it('joins partial lines and keeps a last unterminated line without a newline', () => {
      const tail = Buffer.from(cri('stdout', 'P', 'hel') + cri('stdout', 'F', 'lo') + cri('stdout', 'P', 'no newline'));
      assert.equal(lastStringFromCriLog(tail), 'hello\nno newline');
    });

    it('skips lines that are not CRI records after the first, and refuses a log that does not start with one', () => {
      assert.equal(lastStringFromCriLog(Buffer.from(cri('stdout', 'F', 'a') + 'garbage\n' + cri('stdout', 'F', 'b'))), 'a\nb\n');
      assert.throws(() => lastStringFromCriLog(Buffer.from('{"log":"x"}\n')), { message: 'failed to get parse function: unsupported log format: "{\\"log\\":\\"x\\"}\\n"' });
      assert.equal(lastStringFromCriLog(Buffer.alloc(0)), '');
    });

    it('counts an unterminated last line as no line (tail.FindTailLineStartIndex)', async () => {
      const logPath = join(dir.path, 'unterminated.log');
      await writeFile(logPath, `a\nb\nc`);
      assert.equal((await files.readLogTail(logPath, 1)).toString(), 'b\nc');
      assert.equal((await files.readLogTail(logPath, 0)).toString(), 'c');
      assert.equal((await files.readLogTail(logPath, 5)).toString(), 'a\nb\nc');
      await writeFile(logPath, `a\nb\nc\n`);
      assert.equal((await files.readLogTail(logPath, 2)).toString(), 'b\nc\n');
    });
  });

  describe('makeTerminationMessageMount', () => {
    it('creates <podDir>/containers/<name>/<8 hex> empty with mode 0666 whatever the umask, a new one per instance', async () => {
      const podDir = join(dir.path, 'pod');
      const container = { name: 'main', image: 'busybox' };
      const old = process.umask(0o077);
      let a;
      let b;
      try {
        a = await makeTerminationMessageMount(files, logger, { container, podDir });
        b = await makeTerminationMessageMount(files, logger, { container, podDir });
      } finally {
        process.umask(old);
      }
      assert.ok(a !== undefined && b !== undefined);
      const cdir = join(podDir, 'containers', 'main');
      assert.match(a.hostPath ?? '', new RegExp(`^${cdir}/[0-9a-f]{8}$`));
      assert.notEqual(a.hostPath, b.hostPath);
      assert.deepEqual({ ...a, hostPath: '' }, { containerPath: '/dev/termination-log', hostPath: '', readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' });
      const st = await stat(a.hostPath!);
      assert.equal(st.size, 0);
      assert.equal(st.mode & 0o777, 0o666);
      assert.equal((await readdir(cdir)).length, 2);
    });

    it('mounts at the container’s own path; none for an empty path', async () => {
      const podDir = join(dir.path, 'pod2');
      const m = await makeTerminationMessageMount(files, logger, { container: { name: 'c', terminationMessagePath: '/tmp/last-words' }, podDir, uid: () => 'deadbeef' });
      assert.equal(m?.containerPath, '/tmp/last-words');
      assert.equal(m?.hostPath, join(podDir, 'containers', 'c', 'deadbeef'));
      assert.equal(await makeTerminationMessageMount(files, logger, { container: { name: 'c', terminationMessagePath: '' }, podDir }), undefined);
    });

    it('leaves the mount out when the file cannot be made', async () => {
      const blocker = join(dir.path, 'blocker');
      await writeFile(blocker, 'a file where the pod dir should be');
      assert.equal(await makeTerminationMessageMount(files, logger, { container: { name: 'c' }, podDir: blocker }), undefined);
      const line = JSON.parse(logged.at(-1) ?? '{}') as { msg?: string; path?: string; err?: { message?: string } };
      assert.equal(line.msg, 'Error on creating dir');
      assert.equal(line.err?.message, `mkdir ${join(blocker, 'containers', 'c')}: not a directory`);
    });
  });

  it('annotations carry the path and policy (defaulted) and are read back', () => {
    const pod = aPod();
    const a = newContainerAnnotations({ name: 'c', image: 'busybox' }, pod, 0, false);
    assert.deepEqual([containerInfoFrom({}, a).terminationMessagePath, containerInfoFrom({}, a).terminationMessagePolicy], ['/dev/termination-log', 'File']);
    const b = newContainerAnnotations({ name: 'c', terminationMessagePath: '/x', terminationMessagePolicy: 'FallbackToLogsOnError' }, pod, 0, false);
    assert.equal(containerInfoFrom({}, b).terminationMessagePolicy, 'FallbackToLogsOnError');
    assert.equal(containerInfoFrom({}, b).terminationMessagePath, '/x');
    assert.equal(containerInfoFrom({}, {}).terminationMessagePath, '');
  });
});
