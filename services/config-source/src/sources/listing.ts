/**
 * What a source hands to PodConfig after each look at its manifests.
 *
 * Models kubetypes.PodUpdate with Op SET (a source always sends its full list), plus the manifest
 * errors the kubelet only logs.
 */
import type { BoundPod, PodSource } from '@splitlet/api';

/** A pod and the manifest it came from (a file path or a URL). */
export interface SourcedPod {
  readonly pod: BoundPod;
  readonly origin: string;
}

/** A manifest that could not be turned into pods. */
export interface ManifestError {
  /** `file`: a manifest file; `url`: the manifest URL. */
  readonly kind: 'file' | 'url';
  /** The file path or URL (credentials removed). */
  readonly location: string;
  /** The error, e.g. `invalid pod: name is needed for the pod`. */
  readonly message: string;
  /** 0-based document index in a multi-document file. */
  readonly document?: number;
}

/**
 * One look at a source. `pods` present = a full SET (also `[]`: the source is seen); `pods` absent =
 * nothing changes (e.g. the http body could not be used), only `errors` are reported.
 */
export interface SourceListing {
  readonly source: PodSource;
  readonly pods?: readonly SourcedPod[];
  /** Every manifest error of this look (a location missing here is no longer in error). */
  readonly errors: readonly ManifestError[];
  /**
   * With `pods`: how they differ from this source's previous listing, so PodConfig can merge the
   * changed pods alone (O(changes), not O(pods)). Every pod not in `upserted` must be the same
   * object as in the previous listing and keep its place; `upserted` pods replace the one with their
   * UID in place or, when new, come last in the given order. PodConfig falls back to the full SET
   * when it cannot be sure of the same result. Absent: a full listing, merged as a whole.
   */
  readonly changes?: ListingChanges;
}

/** What changed in a source's listing since its previous one (see {@link SourceListing.changes}). */
export interface ListingChanges {
  readonly upserted: readonly SourcedPod[];
  /** UIDs of pods the previous listing had and this one has not. */
  readonly removed: readonly string[];
}
