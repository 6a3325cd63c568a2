import { hasErrorCode } from '@splitlet/api';

/** True for an Error carrying `code` (a CredentialError, checked by code as the house style says). */
export function isKubeletErrorWithCode(e: unknown, code: string): boolean {
  return e instanceof Error && hasErrorCode(e, code);
}
