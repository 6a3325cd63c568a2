/**
 * `splitlet runtime up|down|status`: the local containerd as a CLI command, and the one call
 * `splitlet up --runtime containerd` needs when no `--cri-endpoint` is given.
 */
import type { Writable } from 'node:stream';
import { containerdStatus, startContainerd, stopContainerd } from './containerd.js';
import type { LocalContainerd } from './containerd.js';
import { ensureImages } from './oci-image.js';
import type { EnsuredImage } from './oci-image.js';
import { RuntimeError } from './runtime-error.js';

/** Options of {@link ensureLocalRuntime} and `runtime up`. */
export interface LocalRuntimeOptions {
  /** The pods' IPv4 subnet. @default derived from the state dir (see `startContainerd`) */
  subnet?: string | undefined;
  /** The CNI network name. @default `splitlet-<hash>` */
  networkName?: string | undefined;
  /** Let containerd pull from registries. @default false (pulls of non-loopback images fail at once) */
  allowPulls?: boolean | undefined;
}

/**
 * Starts (or reuses) the state dir's containerd and makes sure its images are there. What
 * `splitlet up --runtime containerd` calls when no `--cri-endpoint` is given; use `runtime.socket`
 * as the CRI endpoint. The daemon keeps running after the caller exits (`splitlet runtime down`
 * stops it). Idempotent.
 */
export async function ensureLocalRuntime(stateDir: string, options: LocalRuntimeOptions = {}): Promise<{ runtime: LocalContainerd; images: EnsuredImage[] }> {
  const runtime = await startContainerd({
    stateDir,
    ...(options.subnet === undefined ? {} : { subnet: options.subnet }),
    ...(options.networkName === undefined ? {} : { name: options.networkName }),
    registryAccess: options.allowPulls === true ? 'direct' : 'none',
  });
  const images = await ensureImages(runtime);
  return { runtime, images };
}

/** Arguments of {@link runtimeCommand}. */
export interface RuntimeCommandArgs extends LocalRuntimeOptions {
  /** `up`, `down` or `status`. */
  sub: string | undefined;
  /** The splitlet state dir (its root). */
  stateDir: string;
  /** `down`: also delete `<stateDir>/containerd/` (images, config). @default false */
  purge?: boolean | undefined;
  /** Print JSON instead of text. @default false */
  json?: boolean | undefined;
}

/**
 * Runs `splitlet runtime up|down|status`, writing to `out`; resolves with the exit code
 * (`status`: 0 running and ready, 1 otherwise). Failures are {@link RuntimeError}s, which the CLI
 * prints as plain messages.
 */
export async function runtimeCommand(args: RuntimeCommandArgs, out: Writable): Promise<number> {
  const print = (text: string, json: unknown): void => {
    out.write(args.json === true ? `${JSON.stringify(json, null, 2)}\n` : `${text}\n`);
  };
  switch (args.sub) {
    case 'up': {
      const { runtime: rt, images } = await ensureLocalRuntime(args.stateDir, args);
      print(
        [
          `containerd ${rt.version.runtimeVersion} ${rt.reused ? 'already running' : `started in ${rt.startMs} ms`} (pid ${rt.pid})`,
          `  CRI endpoint: ${rt.socket}`,
          `  pod network:  ${rt.network.name} ${rt.network.subnet} on bridge ${rt.network.bridge} (snapshotter ${rt.snapshotter})`,
          `  images:       ${images.map((i) => `${i.names.join(', ')}${i.imported ? ' (imported)' : ''}`).join('; ')}`,
          `  log:          ${rt.paths.log}`,
          `Use it: splitlet up --runtime containerd --cri-endpoint ${rt.socket}`,
        ].join('\n'),
        { endpoint: rt.socket, pid: rt.pid, reused: rt.reused, startMs: rt.startMs, version: rt.version, network: rt.network, snapshotter: rt.snapshotter, images },
      );
      return 0;
    }
    case 'down': {
      await stopContainerd(args.stateDir, { removeState: args.purge === true });
      print(`containerd stopped${args.purge === true ? ' and its state removed' : ''}`, { stopped: true, purged: args.purge === true });
      return 0;
    }
    case 'status': {
      const st = await containerdStatus(args.stateDir);
      const lines = st.running
        ? [
            `containerd ${st.version?.runtimeVersion ?? ''} running (pid ${st.pid ?? '?'})${st.reason === undefined ? '' : `, not ready: ${st.reason}`}`,
            `  CRI endpoint: ${st.socket}`,
          ]
        : [`containerd not running: ${st.reason ?? 'unknown'}`];
      if (st.network !== undefined)
        lines.push(`  pod network:  ${st.network.name} ${st.network.subnet} on bridge ${st.network.bridge} (${st.bridgeUp === true ? 'up' : 'not created yet'})`);
      lines.push(`  log:          ${st.logFile}`);
      print(lines.join('\n'), st);
      return st.running && st.reason === undefined ? 0 : 1;
    }
    default:
      throw new RuntimeError('InvalidOption', `splitlet runtime: expected up, down or status, got ${args.sub === undefined ? 'nothing' : `"${args.sub}"`}`);
  }
}
