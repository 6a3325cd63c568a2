/**
 * The termination grace period a pod worker uses, which only ever shrinks.
 *
 * Models pkg/kubelet/pod_workers.go (calculateEffectiveGracePeriod).
 */

/**
 * The inputs of {@link calculateEffectiveGracePeriod}.
 *
 * Models pkg/kubelet/pod_workers.go (calculateEffectiveGracePeriod arguments).
 */
export interface GracePeriodInput {
  /** The grace period already recorded for the pod worker (`podSyncStatus.gracePeriod`); 0 when none. */
  readonly current: number;
  readonly pod: {
    readonly metadata: { readonly deletionGracePeriodSeconds?: number | null | undefined };
    readonly spec: { readonly terminationGracePeriodSeconds?: number | null | undefined };
  };
  /** KillPodOptions.PodTerminationGracePeriodSecondsOverride (eviction, orphan cleanup …). */
  readonly override?: number | undefined;
}

/**
 * Starts from `current`; `metadata.deletionGracePeriodSeconds` and then the kill override replace it
 * when `current` is 0 or they are smaller; with neither applied and `current` 0 the pod's
 * `spec.terminationGracePeriodSeconds` is used; the result is never below 1 second.
 * `overridden` says whether the deletion grace or the override was applied.
 *
 * Models podWorkers.calculateEffectiveGracePeriod.
 */
export function calculateEffectiveGracePeriod(input: GracePeriodInput): { gracePeriod: number; overridden: boolean } {
  let gracePeriod = input.current;
  let overridden = false;
  const deletion = input.pod.metadata.deletionGracePeriodSeconds;
  if (deletion !== undefined && deletion !== null && (gracePeriod === 0 || deletion < gracePeriod)) {
    gracePeriod = deletion;
    overridden = true;
  }
  const override = input.override;
  if (override !== undefined && (gracePeriod === 0 || override < gracePeriod)) {
    gracePeriod = override;
    overridden = true;
  }
  const spec = input.pod.spec.terminationGracePeriodSeconds;
  if (!overridden && gracePeriod === 0 && spec !== undefined && spec !== null) gracePeriod = spec;
  if (gracePeriod < 1) gracePeriod = 1;
  return { gracePeriod, overridden };
}
