/**
 * Sticky A/B splits (docs/orchestrator.md "Sticky A/B splits"): a request naming a config with a
 * `split` is served by one of its arms, chosen by a hash of the request's split key (a context
 * feature such as `user_id`), so every request of one key goes to the same arm while the weights
 * stand. Routing happens once per request: the arm's snapshot runs the request, whatever its own
 * config says (the registry refuses chains of splits anyway).
 */
import { createHash } from 'node:crypto';
import type { DataType } from '../../datatypes/data-type.js';
import { formatValue } from '../../datatypes/value-text.js';
import type { BoundCounter, Metrics } from '../../platform/metrics/index.js';
import type { ModelSnapshot } from '../config/index.js';
import type { SplitConfig } from '../config/split-schema.js';
import type { ModelTraffic } from '../traffic/model-traffic.js';
import type { InferenceRequest } from './feature-init.js';

/** How a request of a split config found its arm (the `assignment` label). */
export type SplitAssignment =
  /** By the hash of its key. */
  | 'hashed'
  /** It carried no value of the key: the config itself served it. */
  | 'no_key'
  /** Its key hashed to an arm that no longer serves (its document was removed): the config itself served it. */
  | 'arm_not_serving';

/** 2^48: the hash's first six bytes as an integer fit a double exactly. */
const POINTS = 2 ** 48;

/**
 * Where `keyText` falls in [0, 100): the first six bytes of SHA-256(salt, NUL, key text) as a
 * fraction of 2^48, times 100. SHA-256 is a fixed function of the bytes (FIPS 180-4), so the point
 * is the same in every process, after every restart and on every machine; its output bits are
 * uniform, so the points of distinct keys spread evenly whatever the keys look like.
 */
export function splitPoint(salt: string, keyText: string): number {
  const digest = createHash('sha256').update(salt).update('\u0000').update(keyText).digest();
  return (digest.readUIntBE(0, 6) / POINTS) * 100;
}

/**
 * The arm whose range holds `point`: the arms take consecutive ranges of [0, 100) in declared
 * order, each as wide as its weight, so moving weight between neighbours moves only the keys of
 * the range that changed hands. A zero-weight arm serves no key.
 */
export function armAt(split: SplitConfig, point: number): string {
  let upper = 0;
  let last: string | undefined;
  for (const arm of split.arms) {
    if (arm.weight <= 0) continue;
    upper += arm.weight;
    last = arm.model_config_id;
    if (point < upper) return last;
  }
  // Weights summing to 99.999… by rounding: the top of the range belongs to the last arm.
  return last ?? split.arms[0]!.model_config_id;
}

/**
 * The request's value of the split key, as text: a Predict request's context feature of that name
 * (its value rendered as `lattice predict` prints it, so `u42` as STRING, or 42 as INT32 or INT64,
 * are one key whatever type a caller sends); a legacy request's entity or inline feature of that
 * name with one value (a value broadcast to every row). Undefined when absent, empty, or not a
 * well-formed value (FeatureInit then refuses the request with the field named).
 */
export function splitKeyText(input: InferenceRequest, key: string): string | undefined {
  let text: string | undefined;
  if (input.pattern === 'legacy') {
    for (const entity of input.request.entities) {
      if (entity.entity === key && entity.ids.length === 1) text = entity.ids[0];
      for (const feature of entity.features)
        if (feature.name === key && feature.idsFeatureValue.length === 1) text = feature.idsFeatureValue[0];
      if (text !== undefined) break;
    }
  } else {
    const feature = input.request.contextFeatures.find((f) => f.name === key);
    if (feature !== undefined) {
      try {
        text = formatValue(feature.dataType as number as DataType, feature.value, feature.vectorDim);
      } catch {
        text = undefined;
      }
    }
  }
  return text === '' ? undefined : text;
}

/** Records one routed request's outcome and time into its arm's series. */
export interface ArmRecorder {
  record(ms: number, failed: boolean): void;
}

export interface Routed<C> {
  /** The snapshot that serves the request. */
  readonly snapshot: ModelSnapshot<C>;
  /** The arm's series, for a config with a split; undefined otherwise. */
  readonly arm: ArmRecorder | undefined;
}

/**
 * Routes a request of a split config to its arm, and counts it per arm: Prometheus
 * `orchestrator_split_requests_total{model, arm, assignment}`, `_errors_total{model, arm}` and
 * `_request_seconds{model, arm}`, and the console's per-arm numbers (ModelTraffic). A config
 * without a split is served by itself, untouched and uncounted here.
 */
export class SplitRouter<C> {
  /** One recorder per (config, arm), made on its first request and kept: nothing allocated per request. */
  private readonly recorders = new Map<string, ArmRecorder>();
  private readonly assignments = new Map<string, BoundCounter>();
  private readonly metrics;

  constructor(
    private readonly registry: { get(id: string): ModelSnapshot<C> | undefined },
    metrics?: Metrics,
    private readonly traffic?: ModelTraffic,
  ) {
    this.metrics = metrics && {
      requests: metrics.counter(
        'orchestrator_split_requests_total',
        'Requests of a config with a sticky A/B split, by the config, the arm that served them and how the arm was found (hashed, no_key, arm_not_serving)',
        ['model', 'arm', 'assignment'],
      ),
      errors: metrics.counter(
        'orchestrator_split_errors_total',
        'Failed requests of a config with a sticky A/B split, by the config and the arm that served them',
        ['model', 'arm'],
      ),
      seconds: metrics.timing(
        'orchestrator_split_request_seconds',
        'Time of the requests of a config with a sticky A/B split, from routing to the answer ready, by the config and the arm that served them',
        ['model', 'arm'],
      ),
    };
  }

  route(requested: ModelSnapshot<C>, input: InferenceRequest): Routed<C> {
    const split = requested.model.config.split;
    if (split === undefined) return { snapshot: requested, arm: undefined };
    const keyText = splitKeyText(input, split.key);
    let assignment: SplitAssignment = 'no_key';
    let snapshot = requested;
    if (keyText !== undefined) {
      assignment = 'hashed';
      const armId = armAt(split, splitPoint(split.salt ?? requested.id, keyText));
      if (armId !== requested.id) {
        const arm = this.registry.get(armId);
        if (arm === undefined) assignment = 'arm_not_serving';
        else snapshot = arm;
      }
    }
    this.assigned(requested.id, snapshot.id, assignment);
    return { snapshot, arm: this.arm(requested.id, snapshot.id) };
  }

  private assigned(model: string, arm: string, assignment: SplitAssignment): void {
    if (this.metrics === undefined) return;
    const key = `${model}\u0000${arm}\u0000${assignment}`;
    let counter = this.assignments.get(key);
    if (counter === undefined) {
      counter = this.metrics.requests.bind({ model, arm, assignment });
      this.assignments.set(key, counter);
    }
    counter.inc();
  }

  private arm(model: string, arm: string): ArmRecorder {
    const key = `${model}\u0000${arm}`;
    let recorder = this.recorders.get(key);
    if (recorder === undefined) {
      const errors = this.metrics?.errors.bind({ model, arm });
      const seconds = this.metrics?.seconds.bind({ model, arm });
      const traffic = this.traffic?.arm(model, arm);
      recorder = {
        record: (ms, failed) => {
          if (failed) errors?.inc();
          seconds?.observeMs(ms);
          traffic?.record(ms, failed);
        },
      };
      this.recorders.set(key, recorder);
    }
    return recorder;
  }
}
