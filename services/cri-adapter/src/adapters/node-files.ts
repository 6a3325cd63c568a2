/**
 * The node's files as kuberuntime touches them: resolv.conf and the pod log directories.
 */
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import type { LogFileRemover, NodeFiles } from '../ports.js';

/**
 * {@link NodeFiles} (and the {@link LogFileRemover} container GC uses) on the local filesystem.
 * `resolvConf` '' disables the resolver config (the kubelet's `--resolv-conf=""`), and
 * readResolvConf then returns ''.
 */
export function createNodeFiles(resolvConf: string): NodeFiles & LogFileRemover {
  return {
    readResolvConf: async () => (resolvConf === '' ? '' : readFile(resolvConf, 'utf8')),
    ensureDir: async (path) => {
      await mkdir(path, { recursive: true, mode: 0o755 });
    },
    listDir: (path) => readdir(path),
    removeFile: async (path) => {
      await rm(path, { force: true });
    },
    removeAll: async (path) => {
      await rm(path, { recursive: true, force: true });
    },
  };
}
