/**
 * The pull secret source of standalone mode: there is no API server, so no secret can be retrieved
 * and every pull uses the node's docker config (or none).
 */
import { CredentialError } from '../credentials/credential-error.js';
import type { PullSecretSource } from '../ports.js';

/** A {@link PullSecretSource} that finds no secret (`PullSecretNotFound`, naming it). */
export function createStandalonePullSecretSource(): PullSecretSource {
  return {
    getSecret: (namespace, name) =>
      Promise.reject(new CredentialError('PullSecretNotFound', `secret "${namespace}/${name}" not found: standalone mode has no API server to read secrets from`)),
  };
}
