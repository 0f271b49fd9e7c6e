/**
 * Live recall as serving measures it (the `vss_avg_recall` sampler, serving/recall-sampler.ts) for
 * the admin's automatic rollback (admin/operations/recall-watch.ts): the mean of the samples one
 * variant's queries gave on one version over the last window. The admin reads the samples every
 * serving process records in SQL (store/live-recall-repository.ts); serving's sampler also answers
 * for its own process.
 */
export interface LiveRecallFigures {
  /** Samples measured in the window. */
  samples: number;
  /** Their mean recall (0..1); NaN when there are none. */
  mean: number;
}

export interface LiveRecallSource {
  liveRecall(
    variant: { entity: string; modelName: string; variant: string },
    version: number,
    windowMs: number,
  ): Promise<LiveRecallFigures>;
}
