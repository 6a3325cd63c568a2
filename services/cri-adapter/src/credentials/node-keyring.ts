/**
 * The node's own registry credentials: the first docker config file found in the kubelet's search
 * paths, re-read at most every 5 minutes.
 *
 *   config.json in: <root dir>, <working dir>, $HOME/.docker, /.docker      (first valid one wins)
 *   then, only when none was found, .dockercfg in: <root dir>, <working dir>, $HOME, /
 *
 * Models pkg/credentialprovider/config.go (DefaultDockerConfigJSONPaths, DefaultDockercfgPaths,
 * ReadDockerConfigJSONFile, ReadDockercfgFile, ReadDockerConfigFile; the root dir is the kubelet's
 * SetPreferredDockercfgPath(--root-dir)) and provider.go (defaultDockerConfigProvider wrapped in a
 * CachingDockerConfigProvider with a 5-minute lifetime).
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import { readDockercfg, readDockerConfigJson, type DockerConfig } from './docker-config.js';
import { BasicDockerKeyring, type DockerKeyring } from './keyring.js';

/** Where the kubelet looks for docker config files. */
export interface DockerConfigSearchPaths {
  /** The kubelet root dir (--root-dir), searched first. */
  readonly rootDir: string;
  /** The process's working directory. */
  readonly workingDir: string;
  /** $HOME. */
  readonly homeDir: string;
}

/** The `config.json` candidates, in search order. */
export function dockerConfigJsonPaths(p: DockerConfigSearchPaths): string[] {
  return [p.rootDir, p.workingDir, join(p.homeDir, '.docker'), '/.docker'].map((d) => resolve(d, 'config.json'));
}

/** The legacy `.dockercfg` candidates, in search order. */
export function dockercfgPaths(p: DockerConfigSearchPaths): string[] {
  return [p.rootDir, p.workingDir, p.homeDir, '/'].map((d) => resolve(d, '.dockercfg'));
}

/** Reads a file as UTF-8; rejects with an `ENOENT` code when it does not exist. */
export type ReadTextFile = (path: string) => Promise<string>;

/** The config that was found, and where; undefined when no valid file exists in any search path. */
export interface FoundDockerConfig {
  readonly config: DockerConfig;
  readonly path: string;
}

function isNotFound(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

async function firstValid(
  paths: readonly string[],
  parse: (text: string, what: string) => DockerConfig,
  readText: ReadTextFile,
  logger: Logger,
): Promise<FoundDockerConfig | undefined> {
  for (const path of paths) {
    let text: string;
    try {
      text = await readText(path);
    } catch (e) {
      if (!isNotFound(e)) logger.debug('cannot read a docker config file', { path, err: e });
      continue;
    }
    try {
      return { config: parse(text, path), path };
    } catch (e) {
      // The message names the file and the problem, never its contents.
      logger.warn('ignoring an invalid docker config file', { path, err: e });
    }
  }
  return undefined;
}

/**
 * The first valid `config.json`, else the first valid `.dockercfg`, in the search paths. Missing and
 * unreadable files are skipped; an invalid one is skipped with a warning naming it.
 *
 * Models ReadDockerConfigFile.
 */
export async function readDockerConfigFile(
  paths: DockerConfigSearchPaths,
  logger: Logger,
  readText: ReadTextFile = (p) => readFile(p, 'utf8'),
): Promise<FoundDockerConfig | undefined> {
  return (await firstValid(dockerConfigJsonPaths(paths), readDockerConfigJson, readText, logger)) ?? (await firstValid(dockercfgPaths(paths), readDockercfg, readText, logger));
}

/** Gives the node keyring (the default keyring pull secrets are unioned with). */
export interface NodeKeyringProvider {
  /** The keyring from the node's docker config file; never rejects (no file: an empty keyring). */
  keyring(): Promise<DockerKeyring>;
}

/** Options of {@link createNodeKeyringProvider}. */
export interface NodeKeyringOptions {
  readonly paths: DockerConfigSearchPaths;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How long a read is reused. @default 300000 (the kubelet's 5 minutes) */
  readonly lifetimeMs?: number;
  /** @default fs.readFile as UTF-8 */
  readonly readText?: ReadTextFile;
}

/**
 * The node keyring, read from the docker config search paths and cached for `lifetimeMs` (also when
 * nothing was found, as the kubelet does). Concurrent callers share one read.
 */
export function createNodeKeyringProvider(options: NodeKeyringOptions): NodeKeyringProvider {
  const lifetimeMs = options.lifetimeMs ?? 300_000;
  let cached: { keyring: DockerKeyring; expiresAt: number } | undefined;
  let reading: Promise<DockerKeyring> | undefined;
  const read = async (): Promise<DockerKeyring> => {
    const found = await readDockerConfigFile(options.paths, options.logger, options.readText);
    const keyring = new BasicDockerKeyring();
    if (found !== undefined) {
      keyring.add(found.config, `file ${found.path}`);
      for (const location of keyring.invalidEntries) options.logger.warn('ignoring an invalid registry entry in a docker config file', { path: found.path, registry: location });
      options.logger.debug('read the node docker config', { path: found.path, registries: found.config.size });
    }
    cached = { keyring, expiresAt: options.clock.now() + lifetimeMs };
    return keyring;
  };
  return {
    keyring: async () => {
      if (cached !== undefined && options.clock.now() < cached.expiresAt) return cached.keyring;
      reading ??= read().finally(() => {
        reading = undefined;
      });
      return reading;
    },
  };
}
