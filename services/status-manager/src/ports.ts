/**
 * The narrow interfaces status-manager consumes.
 */
import type { PodStatusRecord } from '@splitlet/api';

/** The pod status cache (`sl_status`), which status-manager alone writes. */
export interface StatusStore {
  /** Every record of this node (the cache is rebuilt from it at start). */
  load(): Promise<PodStatusRecord[]>;
  put(record: PodStatusRecord): Promise<void>;
  delete(uid: string): Promise<void>;
}
