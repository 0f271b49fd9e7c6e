/**
 * A pass over a request's protobuf bytes before they are decoded: decoding builds an object per
 * target, value and id (about a microsecond each), so a 16 MB request of tiny values took seconds to
 * decode before FeatureInit could reject it. This pass only reads tags and lengths: it counts what
 * the request limits bound (targets, groups, schema entries, values, ids, slate indices) and rejects
 * past them with the same INVALID_ARGUMENT FeatureInit gives, and it checks that every string field
 * is UTF-8 (the decoder would replace a bad sequence silently), naming the field. Bytes that are not
 * well-formed protobuf are left to the decoder, which says what is wrong.
 */
import {
  checkUtf8 as checkText,
  eachField,
  FieldCursor,
  LEN,
  type Visit,
} from '../../platform/protobuf/field-scan.js';
import { overLimit, REQUEST_LIMITS } from '../engine/request-limits.js';

/** Checks the UTF-8 of the string field `nameField` of a nested message (FeatureSchema.name, ContextFeature.name). */
function checkNestedText(buf: Uint8Array, from: number, to: number, nameField: number, field: () => string) {
  eachField(buf, from, to, (f, type, a, b) => {
    if (f === nameField && type === LEN) checkText(buf, a, b, field);
  });
}

function checkModelIdBytes(buf: Uint8Array, from: number, to: number): void {
  // A UTF-8 character takes at most 4 bytes; the handler checks the exact length in characters.
  if (to - from > 4 * REQUEST_LIMITS.modelConfigIdLength)
    throw overLimit('modelConfigIdLength', to - from, 'model_config_id', 'bytes');
  checkText(buf, from, to, () => 'model_config_id');
}

/**
 * PredictRequest: field numbers of proto/orchestrator/v1/predict.proto. `pattern` says which rows
 * count: a point-wise request ignores pairs and slates, as FeatureInit does.
 */
export function precheckPredict(buf: Uint8Array, pattern: 'point' | 'pair' | 'slate'): void {
  eachField(buf, 0, buf.length, predictPrecheck(buf, pattern));
}

/** The pre-check of a PredictRequest as a visitor of its top-level fields, for a walk in slices (sliced-decode.ts). */
export function predictPrecheck(buf: Uint8Array, pattern: 'point' | 'pair' | 'slate'): Visit {
  let targets = 0;
  let groups = 0;
  let values = 0;
  let slateIndices = 0;
  const schema = { context: 0, target: 0, group: 0 };
  const groupField = pattern === 'pair' ? 'pairs' : 'slates';
  const pairs = pattern === 'pair';
  const slates = pattern === 'slate';
  const countSchema = (field: string) => {
    const total = schema.context + schema.target + schema.group;
    if (total > REQUEST_LIMITS.features)
      throw overLimit('features', total, field, 'schema entries in the request');
  };
  const countValue = (field: string) => {
    if (++values > REQUEST_LIMITS.values)
      throw overLimit('values', values, field, 'feature values in the request');
  };
  return (field, type, from, to) => {
    if (type !== LEN) return;
    switch (field) {
      case 1:
        return checkModelIdBytes(buf, from, to);
      case 2:
        return checkText(buf, from, to, () => 'tracking_id');
      case 3: {
        const i = schema.context++;
        countSchema('context_features');
        return checkNestedText(buf, from, to, 1, () => `context_features[${i}].name`);
      }
      case 4: {
        const i = schema.target++;
        countSchema('target_input_schema');
        return checkNestedText(buf, from, to, 1, () => `target_input_schema[${i}].name`);
      }
      case 5: {
        const i = targets++;
        if (targets > REQUEST_LIMITS.targets) throw overLimit('targets', targets, 'targets', 'entries');
        return eachField(buf, from, to, (f, t, a, b) => {
          if (t !== LEN) return;
          if (f === 1) checkText(buf, a, b, () => `targets[${i}].id`);
          else if (f === 2) countValue('targets');
        });
      }
      case 6:
        if (!pairs) return;
        schema.group++;
        countSchema('pair_input_schema');
        return checkNestedText(buf, from, to, 1, () => `pair_input_schema[${schema.group - 1}].name`);
      case 8:
        if (!slates) return;
        schema.group++;
        countSchema('slate_input_schema');
        return checkNestedText(buf, from, to, 1, () => `slate_input_schema[${schema.group - 1}].name`);
      case 7:
      case 9: {
        if ((field === 7 && !pairs) || (field === 9 && !slates)) return;
        if (++groups > REQUEST_LIMITS.groups) throw overLimit('groups', groups, groupField, 'entries');
        return eachField(buf, from, to, (f, t, a, b) => {
          if (f === (pairs ? 3 : 2) && t === LEN) countValue(groupField);
          else if (slates && f === 1) {
            // Packed int32s: one varint ends at each byte below 0x80.
            if (t === LEN) for (let k = a; k < b; k++) slateIndices += buf[k]! < 0x80 ? 1 : 0;
            else slateIndices++;
            if (slateIndices > REQUEST_LIMITS.slateIndices)
              throw overLimit('slateIndices', slateIndices, 'slates', 'target indices in all slates');
          }
        });
      }
    }
  };
}

/** OrchestratorRequestProto: field numbers of proto/orchestrator/v1/orchestrator.proto. */
export function precheckLegacy(buf: Uint8Array): void {
  eachField(buf, 0, buf.length, legacyPrecheck(buf));
}

/** The pre-check of an OrchestratorRequestProto as a visitor of its top-level fields. */
export function legacyPrecheck(buf: Uint8Array): Visit {
  const check = new LegacyPrecheck(buf);
  return (field, type, from, to) => {
    if (type !== LEN) return;
    if (field === 1)
      for (const _ of check.entity(from, to)) {
      }
    else check.other(field, from, to);
  };
}

/** Fields of an entity checked between two looks at the clock, in a time-sliced walk. */
const ENTITY_FIELDS_PER_CHECK = 1024;

/**
 * The legacy pre-check's state across a request: an entity (one may hold 100,000 ids, 20-30 ms to
 * walk) is checked by a generator that pauses every ENTITY_FIELDS_PER_CHECK fields, so a sliced
 * decoder can give the event loop back between them (request-decoding.ts); walked to the end at
 * once, it is the same check.
 */
export class LegacyPrecheck {
  private entities = 0;
  private names = 0;
  private values = 0;

  constructor(private readonly buf: Uint8Array) {}

  private count(amount: number): void {
    this.values += amount;
    if (this.values > REQUEST_LIMITS.values)
      throw overLimit('values', this.values, 'entities', 'ids and feature values in the request');
  }

  private countName(): void {
    if (++this.names > REQUEST_LIMITS.features)
      throw overLimit('features', this.names, 'entities', 'entities and features in the request');
  }

  /** A top-level LEN field other than an entity (model_config_id, tracking_id). */
  other(field: number, from: number, to: number): void {
    if (field === 2) checkModelIdBytes(this.buf, from, to);
    else if (field === 3) checkText(this.buf, from, to, () => 'tracking_id');
  }

  /** Checks the entity at `[from, to)`, pausing (yielding) every ENTITY_FIELDS_PER_CHECK fields. */
  *entity(from: number, to: number): Generator<void, void, void> {
    const buf = this.buf;
    const i = this.entities++;
    this.countName();
    let ids = 0;
    let features = 0;
    let walked = 0;
    const fields = new FieldCursor(buf, from, to);
    while (fields.next()) {
      if (++walked % ENTITY_FIELDS_PER_CHECK === 0) yield;
      if (fields.wireType !== LEN) continue;
      const { field, from: a, to: b } = fields;
      if (field === 1) checkText(buf, a, b, () => `entities[${i}].entity`);
      else if (field === 2) {
        const k = ids++;
        if (ids > REQUEST_LIMITS.targets) throw overLimit('targets', ids, `entities[${i}].ids`, 'ids');
        this.count(1);
        checkText(buf, a, b, () => `entities[${i}].ids[${k}]`);
      } else if (field === 3) {
        const j = features++;
        this.countName();
        let n = 0;
        const inner = new FieldCursor(buf, a, b);
        while (inner.next()) {
          if (++walked % ENTITY_FIELDS_PER_CHECK === 0) yield;
          if (inner.wireType !== LEN) continue;
          if (inner.field === 1)
            checkText(buf, inner.from, inner.to, () => `entities[${i}].features[${j}].name`);
          else if (inner.field === 2) {
            const k = n++;
            this.count(1);
            checkText(
              buf,
              inner.from,
              inner.to,
              () => `entities[${i}].features[${j}].ids_feature_value[${k}]`,
            );
          }
        }
      }
    }
  }
}
