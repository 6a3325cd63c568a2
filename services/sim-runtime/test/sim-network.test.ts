/**
 * Simulated containers on the pod network: servers listen on the pod IP (a loopback address) and a
 * real HTTP/TCP client reaches them; images run what they would run (nginx, redis, busybox, an
 * unknown image's long-running default); ExecSync runs the programs inside the container.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { eventually } from '@splitlet/testkit';
import type { ContainerConfig, CriInput } from '@splitlet/cri';
import { knownImageConfig } from '../src/images/known-images.js';
import { createSimRuntime, type SimRuntime } from '../src/simulator.js';

/** Sends `text` over TCP and resolves with everything the server answers until it closes (or `untilText` arrives). */
function tcp(host: string, port: number, text: string, untilText?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port });
    let got = '';
    s.on('connect', () => (untilText === undefined ? s.end(text) : s.write(text)));
    s.on('data', (d: Buffer) => {
      got += d.toString('utf8');
      if (untilText !== undefined && got.includes(untilText)) s.end();
    });
    s.on('close', () => resolve(got));
    s.on('error', reject);
  });
}

describe('simulated pod network', () => {
  let sim: SimRuntime;
  let seq = 0;

  before(() => {
    sim = createSimRuntime({ imageConfig: knownImageConfig });
  });
  after(async () => {
    await sim.close();
  });

  async function run(image: string, config: CriInput<ContainerConfig> = {}): Promise<{ ip: string; containerId: string }> {
    const uid = `net-${++seq}`;
    const { podSandboxId } = await sim.RunPodSandbox({ config: { metadata: { name: uid, namespace: 'default', uid } } });
    const ip = (await sim.PodSandboxStatus({ podSandboxId })).status?.network?.ip ?? '';
    const { containerId } = await sim.CreateContainer({ podSandboxId, config: { metadata: { name: 'c' }, image: { image }, ...config } });
    await sim.StartContainer({ containerId });
    return { ip, containerId };
  }

  it('gives pods loopback IPs (127.77.0.0/16), reachable from the node', async () => {
    const { ip } = await run('busybox:1.36', { command: ['sleep', '3600'] });
    assert.match(ip, /^127\.77\.\d+\.\d+$/);
  });

  it('busybox httpd serves the container’s files on podIP:port to a real HTTP client', async () => {
    const { ip, containerId } = await run('busybox:1.36', { command: ['sh', '-c', 'mkdir -p /www; echo hello from httpd > /www/index.html; httpd -f -p 8080 -h /www'] });
    const res = await eventually(async () => fetch(`http://${ip}:8080/`), { message: `httpd on ${ip}:8080` });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'hello from httpd\n');
    assert.equal((await fetch(`http://${ip}:8080/nope`)).status, 404);
    // Inside the container, localhost is the pod IP: wget reaches the same server.
    const exec = await sim.ExecSync({ containerId, cmd: ['wget', '-q', '-O', '-', 'http://localhost:8080/'], timeout: '5' });
    assert.deepEqual([Buffer.from(exec.stdout).toString(), exec.exitCode], ['hello from httpd\n', 0]);
    const missing = await sim.ExecSync({ containerId, cmd: ['wget', '-q', '-O', '-', 'http://localhost:8080/nope'], timeout: '5' });
    assert.deepEqual([Buffer.from(missing.stderr).toString(), missing.exitCode], ['wget: server returned error: HTTP/1.1 404 Not Found\n', 1]);
    // A stopped container's server is gone.
    await sim.StopContainer({ containerId, timeout: '0' });
    await assert.rejects(fetch(`http://${ip}:8080/`));
  });

  it('httpd without -f daemonizes: the shell goes on and the server lives as long as the container', async () => {
    const { ip } = await run('busybox:1.36', { command: ['sh', '-c', 'echo up > /index.html; httpd -p 8081 -h /; echo started; sleep 3600'] });
    const res = await eventually(async () => fetch(`http://${ip}:8081/index.html`), { message: `httpd on ${ip}:8081` });
    assert.equal(await res.text(), 'up\n');
  });

  it('nc -l -p PORT receives what a real TCP client sends', async () => {
    const { ip, containerId } = await run('busybox:1.36', { command: ['sh', '-c', 'nc -l -p 9000; echo nc exited $?'] });
    await eventually(async () => tcp(ip, 9000, 'ping over tcp\n').then(() => true), { message: `nc on ${ip}:9000` });
    const status = await eventually(
      async () => {
        const s = (await sim.ContainerStatus({ containerId })).status;
        return s?.state === 'CONTAINER_EXITED' ? s : undefined;
      },
      { message: 'the nc container to exit' },
    );
    assert.equal(status.exitCode, 0);
    const probe = await sim.ExecSync({ containerId: (await run('busybox:1.36', { command: ['sleep', '3600'] })).containerId, cmd: ['nc', '-z', ip, '9000'], timeout: '5' });
    assert.equal(probe.exitCode, 1, 'nothing listens any more');
  });

  it('nginx runs its server on :80 (no command: the image’s entrypoint and CMD) and stops on SIGQUIT with 0', async () => {
    const { ip, containerId } = await run('nginx:1.27');
    const res = await eventually(async () => fetch(`http://${ip}/`), { message: `nginx on ${ip}:80` });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /<title>Welcome to nginx!<\/title>/);
    await sim.StopContainer({ containerId, timeout: '10' });
    const s = (await sim.ContainerStatus({ containerId })).status;
    assert.deepEqual([s?.state, s?.exitCode], ['CONTAINER_EXITED', 0]);
  });

  it('redis answers PING on 6379', async () => {
    const { ip } = await run('redis:7');
    const answer = await eventually(async () => tcp(ip, 6379, 'PING\r\n', '\r\n'), { message: `redis on ${ip}:6379` });
    assert.equal(answer, '+PONG\r\n');
  });

  it('an image it does not know runs its command as a long-running process that exits 0 on SIGTERM', async () => {
    const { containerId } = await run('example.com/team/app:2.1', { command: ['python', '/app/main.py'] });
    assert.equal((await sim.ContainerStatus({ containerId })).status?.state, 'CONTAINER_RUNNING');
    await sim.StopContainer({ containerId, timeout: '10' });
    assert.equal((await sim.ContainerStatus({ containerId })).status?.exitCode, 0);
  });

  it('runs as the CRI user (id), and says so when a busybox applet is not simulated', async () => {
    const { containerId } = await run('busybox:1.36', {
      command: ['sleep', '3600'],
      linux: { securityContext: { runAsUser: { value: '1000' }, runAsGroup: { value: '3000' }, supplementalGroups: ['2000'] } },
    });
    const id = await sim.ExecSync({ containerId, cmd: ['id'], timeout: '5' });
    assert.equal(Buffer.from(id.stdout).toString(), 'uid=1000 gid=3000 groups=2000,3000\n');
    const vi = await sim.ExecSync({ containerId, cmd: ['sh', '-c', 'vi /etc/hostname'], timeout: '5' });
    assert.equal(vi.exitCode, 127);
    assert.match(Buffer.from(vi.stderr).toString(), /vi: busybox has this applet but the simulator does not simulate it/);
    const nginx = await sim.ExecSync({ containerId, cmd: ['sh', '-c', 'nginx'], timeout: '5' });
    assert.deepEqual([Buffer.from(nginx.stderr).toString(), nginx.exitCode], ['sh: nginx: not found\n', 127], 'busybox has no nginx');
  });
});

describe('killall in a simulated container', () => {
  it('signals the container’s processes by name: a daemon httpd, a background sleep; none → status 1', async () => {
    const sim = createSimRuntime({ imageConfig: knownImageConfig });
    try {
      const { podSandboxId } = await sim.RunPodSandbox({ config: { metadata: { name: 'k', namespace: 'default', uid: 'k' } } });
      const ip = (await sim.PodSandboxStatus({ podSandboxId })).status?.network?.ip ?? '';
      const { containerId } = await sim.CreateContainer({
        podSandboxId,
        config: {
          metadata: { name: 'c' },
          image: { image: 'busybox:1.36' },
          command: ['sh', '-c', 'echo hi > /index.html; httpd -p 8082 -h /; sleep 1000 & wait $!; echo "sleep ended $?"; sleep 3600'],
        },
      });
      await sim.StartContainer({ containerId });
      await eventually(async () => fetch(`http://${ip}:8082/index.html`), { message: 'httpd answers' });
      const killed = await sim.ExecSync({ containerId, cmd: ['killall', 'httpd'], timeout: '5' });
      assert.equal(killed.exitCode, 0);
      await eventually(
        async () =>
          fetch(`http://${ip}:8082/index.html`).then(
            () => undefined,
            () => true,
          ),
        { message: 'httpd is gone' },
      );
      const none = await sim.ExecSync({ containerId, cmd: ['killall', 'nosuch'], timeout: '5' });
      assert.deepEqual([Buffer.from(none.stderr).toString(), none.exitCode], ['killall: nosuch: no process killed\n', 1]);
      // The background sleep ends (wait returns 143), the script goes on to its foreground sleep; killing
      // that one too ends the script, whose last status (143) is the container's exit code.
      assert.equal((await sim.ExecSync({ containerId, cmd: ['killall', '-TERM', 'sleep'], timeout: '5' })).exitCode, 0);
      assert.equal((await sim.ContainerStatus({ containerId })).status?.state, 'CONTAINER_RUNNING', 'PID 1 (sh) lives on');
      await eventually(async () => ((await sim.ExecSync({ containerId, cmd: ['killall', 'sleep'], timeout: '5' })).exitCode === 0 ? true : undefined), {
        message: 'the foreground sleep is killed',
      });
      const exited = await eventually(
        async () => {
          const s = (await sim.ContainerStatus({ containerId })).status;
          return s?.state === 'CONTAINER_EXITED' ? s : undefined;
        },
        { message: 'the script ends' },
      );
      assert.equal(exited.exitCode, 143);
    } finally {
      await sim.close();
    }
  });
});
