/**
 * What the simulator knows about images: their ENTRYPOINT/CMD/ENV/StopSignal as the official images
 * declare them, and the programs they hold beyond busybox's. busybox images run the simulated
 * busybox; nginx and redis run a real HTTP / RESP server on the pod IP; any other image runs a
 * long-running placeholder (its contents are unknown: every executable runs until stopped).
 */
import type { ImageReference } from '@splitlet/cri';
import { normalizeImageRef } from '@splitlet/cri';
import { nginx, placeholder, redisServer } from '../process/net-programs.js';
import type { Program } from '../process/program.js';
import { resolveCommand } from '../process/sim-process.js';
import type { SimImageConfig } from '../runtime/sim-runtime.js';

const PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** An image's `docker-entrypoint.sh`: one line of output, then it execs its arguments. */
function entrypointScript(name: string, line: string | undefined): Program {
  return async (argv, io, env) => {
    if (line !== undefined) io.stdout.write(`${line}\n`);
    const target = argv[1];
    const program = target === undefined ? undefined : resolveCommand(target, env.container);
    if (target === undefined || program === undefined) {
      io.stderr.write(`${name}: exec: ${target ?? ''}: not found\n`);
      return 127;
    }
    return program(argv.slice(1), io, env);
  };
}

/** busybox:<tag> (the official image: CMD ["sh"]). */
export const BUSYBOX_IMAGE: SimImageConfig = { cmd: ['sh'], env: [PATH] };

const NGINX: SimImageConfig = {
  entrypoint: ['/docker-entrypoint.sh'],
  cmd: ['nginx', '-g', 'daemon off;'],
  env: [PATH],
  stopSignal: 'SIGQUIT',
  programs: new Map([
    ['nginx', nginx],
    ['/docker-entrypoint.sh', entrypointScript('/docker-entrypoint.sh', '/docker-entrypoint.sh: Configuration complete; ready for start up')],
  ]),
};

const REDIS: SimImageConfig = {
  entrypoint: ['docker-entrypoint.sh'],
  cmd: ['redis-server'],
  env: [PATH],
  workingDir: '/data',
  programs: new Map([
    ['redis-server', redisServer],
    ['docker-entrypoint.sh', entrypointScript('docker-entrypoint.sh', undefined)],
  ]),
};

/** The pause image (`registry.k8s.io/pause:<tag>`). */
const PAUSE: SimImageConfig = { entrypoint: ['/pause'], env: [PATH] };

/** Any other image: its processes run until stopped. */
const UNKNOWN: SimImageConfig = { cmd: ['/entrypoint'], env: [PATH], unknownExecutable: 'placeholder', programs: new Map([['/entrypoint', placeholder]]) };

/** The config of a reference, by repository (any tag). */
export function knownImageConfig(reference: string): SimImageConfig {
  let ref: ImageReference;
  try {
    ref = normalizeImageRef(reference);
  } catch {
    return UNKNOWN;
  }
  switch (ref.repository) {
    case 'docker.io/library/busybox':
      return BUSYBOX_IMAGE;
    case 'docker.io/library/nginx':
      return NGINX;
    case 'docker.io/library/redis':
      return REDIS;
    case 'registry.k8s.io/pause':
      return PAUSE;
    default:
      return UNKNOWN;
  }
}
