/**
 * Pod pull secrets: resolving the names a pod lists (`spec.imagePullSecrets`) into secret data on
 * the node, and the keyring they make.
 *
 * Models pkg/kubelet/kubelet_pods.go (getPullSecretsForPod) and
 * pkg/credentialprovider/secrets/secrets.go (MakeDockerKeyring, secretsToTrackedDockerConfigs).
 */
import type { BoundPod } from '@splitlet/api';
import type { Logger } from '@splitlet/telemetry';
import type { EventRecorder, PullSecret, PullSecretSource } from '../ports.js';
import { podRef } from '../kuberuntime/container-ref.js';
import { readDockercfg, readDockerConfigJson } from './docker-config.js';
import { BasicDockerKeyring, unionDockerKeyring, type DockerKeyring } from './keyring.js';

/** The secret types (and their data keys) that hold registry credentials. */
export const DockerSecretTypes = {
  /** `kubernetes.io/dockerconfigjson`, key `.dockerconfigjson` (a config.json). */
  dockerConfigJson: { type: 'kubernetes.io/dockerconfigjson', key: '.dockerconfigjson' },
  /** `kubernetes.io/dockercfg`, key `.dockercfg` (a legacy .dockercfg). */
  dockercfg: { type: 'kubernetes.io/dockercfg', key: '.dockercfg' },
} as const;

/**
 * The pod's pull secrets on top of the node keyring: one keyring of every docker secret (other types
 * and empty data are ignored), whose matches come first, then the node's. Without any docker secret,
 * the node keyring alone. Throws {@link CredentialError} `InvalidDockerConfig` naming the secret when
 * one does not parse.
 *
 * Models secrets.MakeDockerKeyring.
 */
export function makeDockerKeyring(secrets: readonly PullSecret[], nodeKeyring: DockerKeyring): DockerKeyring {
  const fromSecrets = new BasicDockerKeyring();
  let found = 0;
  for (const s of secrets) {
    const source = `secret ${s.namespace}/${s.name}`;
    const json = s.data[DockerSecretTypes.dockerConfigJson.key];
    const cfg = s.data[DockerSecretTypes.dockercfg.key];
    if (s.type === DockerSecretTypes.dockerConfigJson.type && json !== undefined && json !== '') {
      fromSecrets.add(readDockerConfigJson(json, `the ${DockerSecretTypes.dockerConfigJson.key} of ${source}`), source);
      found++;
    } else if (s.type === DockerSecretTypes.dockercfg.type && cfg !== undefined && cfg !== '') {
      fromSecrets.add(readDockercfg(cfg, `the ${DockerSecretTypes.dockercfg.key} of ${source}`), source);
      found++;
    }
  }
  return found === 0 ? nodeKeyring : unionDockerKeyring([fromSecrets, nodeKeyring]);
}

/** The message of the `FailedToRetrieveImagePullSecret` event. */
export function failedToRetrievePullSecretsMessage(names: readonly string[]): string {
  return `Unable to retrieve some image pull secrets (${names.join(', ')}); attempting to pull the image may not succeed.`;
}

/** Dependencies of {@link createPullSecretResolver}. */
export interface PullSecretResolverOptions {
  readonly source: PullSecretSource;
  readonly recorder: EventRecorder;
  readonly logger: Logger;
}

/** Resolves a pod's pull secret names on the node. */
export interface PullSecretResolver {
  /**
   * The pod's pull secrets that could be retrieved, in the pod's order; empty names are skipped.
   * Each one that could not be retrieved is logged ("Unable to retrieve pull secret, the image pull
   * may not succeed.") and, when any is missing, a Warning `FailedToRetrieveImagePullSecret` event
   * names them all — on every call, as the kubelet does on every SyncPod. Never rejects.
   */
  getPullSecretsForPod(pod: BoundPod, names: readonly string[]): Promise<PullSecret[]>;
}

/**
 * Models Kubelet.getPullSecretsForPod (kubelet 1.28+, with the FailedToRetrieveImagePullSecret
 * event of kubernetes PR 117927).
 */
export function createPullSecretResolver(options: PullSecretResolverOptions): PullSecretResolver {
  return {
    getPullSecretsForPod: async (pod, names) => {
      const namespace = pod.metadata.namespace;
      const found: PullSecret[] = [];
      const failed: string[] = [];
      for (const name of names) {
        if (name === '') continue;
        try {
          found.push(await options.source.getSecret(namespace, name));
        } catch (e) {
          options.logger.info('Unable to retrieve pull secret, the image pull may not succeed.', {
            pod: `${namespace}/${pod.metadata.name}`,
            // Not `secret`: the logger redacts fields whose key names a secret, and this is only its name.
            imagePullRef: `${namespace}/${name}`,
            err: e,
          });
          failed.push(name);
        }
      }
      if (failed.length > 0) {
        options.recorder.record({ pod: podRef(pod), eventType: 'Warning', reason: 'FailedToRetrieveImagePullSecret', message: failedToRetrievePullSecretsMessage(failed) });
      }
      return found;
    },
  };
}
