import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/** The repository root (this file is services/cli/dist/paths.js at run time). */
export const repoRoot: string = fileURLToPath(new URL('../../../', import.meta.url));

/** The built entry point of a service. */
export function serviceMain(service: string): string {
  return join(repoRoot, 'services', service, 'dist', 'main.js');
}
