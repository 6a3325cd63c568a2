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
}
