/**
 * The node's facts read from the host this process runs on: `os.cpus()`, `os.totalmem()` and
 * `statfs` of the kubelet root directory's filesystem.
 */
import { statfs } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { dirname } from 'node:path';
import type { NodeProbe } from '../ports.js';

/** The {@link NodeProbe} of this host. */
export function hostNodeProbe(): NodeProbe {
  return {
    cpuCount: () => cpus().length,
    memoryBytes: () => totalmem(),
    filesystemBytes: async (path) => {
      // The root directory may not exist yet: its nearest existing parent is on the same filesystem.
      for (let p = path; ; p = dirname(p)) {
        try {
          const s = await statfs(p);
          return Number(s.blocks) * Number(s.bsize);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(p) === p) throw e;
        }
      }
    },
  };
}
