/**
 * The node's files as kuberuntime touches them: resolv.conf and the pod log directories.
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import type { NodeFiles } from '../ports.js';

/**
 * {@link NodeFiles} on the local filesystem. `resolvConf` '' disables the resolver config (the
 * kubelet's `--resolv-conf=""`), and readResolvConf then returns ''.
 */
export function createNodeFiles(resolvConf: string): NodeFiles {
  return {
    readResolvConf: async () => (resolvConf === '' ? '' : readFile(resolvConf, 'utf8')),
    ensureDir: async (path) => {
      await mkdir(path, { recursive: true, mode: 0o755 });
    },
    listDir: (path) => readdir(path),
  };
}
