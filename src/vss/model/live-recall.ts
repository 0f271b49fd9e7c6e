/**
 * Live recall as serving measures it (the `vss_avg_recall` sampler, serving/recall-sampler.ts) for
 * the admin's automatic rollback (admin/operations/recall-watch.ts): the mean of the samples one
 * variant's queries gave on one collection (one version) since a time. Serving implements it; the
 * admin reads it when both run in one process (`lattice vss`, `lattice up`).
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
    collection: string,
    sinceMs: number,
  ): LiveRecallFigures;
}
