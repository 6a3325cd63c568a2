/**
 * `splitlet up --config FILE` (or `SPLITLET_CONFIG`): the kubelet's `KubeletConfiguration` file,
 * with the kubelet's flags laid over it, validated once before any process starts.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { KUBELET_CONFIG_API_VERSION, applyKubeletFlags, isConfigError, parseKubeletConfig, type ParsedKubeletConfig } from '@splitlet/service';
import { CliError } from '../state-dir.js';

/**
 * Reads `file` (YAML or JSON; none: an empty configuration), applies `flags` (by kubelet flag name,
 * e.g. `max-pods`) and validates. Throws a {@link CliError} naming the file and every bad field;
 * returns the configuration and one warning line per ignored field.
 */
export function loadKubeletConfigFile(file: string | undefined, flags: Readonly<Record<string, string | undefined>>): ParsedKubeletConfig {
  let doc: unknown = { kind: 'KubeletConfiguration', apiVersion: KUBELET_CONFIG_API_VERSION };
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new CliError(`failed to load kubelet config file, path: ${file}, error: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
    }
    try {
      doc = parse(text) as unknown;
    } catch (e) {
      throw new CliError(`failed to load kubelet config file, path: ${file}, error: not valid YAML or JSON: ${(e as Error).message}`);
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
      throw new CliError(`failed to load kubelet config file, path: ${file}, error: must be a KubeletConfiguration object`);
  }
  try {
    return parseKubeletConfig(applyKubeletFlags(doc as Record<string, unknown>, flags));
  } catch (e) {
    if (isConfigError(e)) throw new CliError(`${file === undefined ? '' : `${file}: `}${e.message}`);
    throw e;
  }
}
