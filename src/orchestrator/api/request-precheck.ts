/**
 * A pass over a request's protobuf bytes before they are decoded: decoding builds an object per
 * target, value and id (about a microsecond each), so a 16 MB request of tiny values took seconds to
 * decode before FeatureInit could reject it. This pass only reads tags and lengths: it counts what
 * the request limits bound (targets, groups, schema entries, values, ids, slate indices) and rejects
 * past them with the same INVALID_ARGUMENT FeatureInit gives, and it checks that every string field
 * is UTF-8 (the decoder would replace a bad sequence silently), naming the field. Bytes that are not
 * well-formed protobuf are left to the decoder, which says what is wrong.
 */
import { checkUtf8 as checkText, eachField, LEN, type Visit } from '../../platform/protobuf/field-scan.js';
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

/** The pre-check of an OrchestratorRequestProto as a visitor of its top-level fields (sliced-decode.ts). */
export function legacyPrecheck(buf: Uint8Array): Visit {
  let entities = 0;
  let names = 0;
  let values = 0;
  const count = (amount: number) => {
    values += amount;
    if (values > REQUEST_LIMITS.values)
      throw overLimit('values', values, 'entities', 'ids and feature values in the request');
  };
  return (field, type, from, to) => {
    if (type !== LEN) return;
    if (field === 2) return checkModelIdBytes(buf, from, to);
    if (field === 3) return checkText(buf, from, to, () => 'tracking_id');
    if (field !== 1) return;
    const i = entities++;
    if (++names > REQUEST_LIMITS.features)
      throw overLimit('features', names, 'entities', 'entities and features in the request');
    let ids = 0;
    let features = 0;
    eachField(buf, from, to, (f, t, a, b) => {
      if (t !== LEN) return;
      if (f === 1) checkText(buf, a, b, () => `entities[${i}].entity`);
      else if (f === 2) {
        const k = ids++;
        if (ids > REQUEST_LIMITS.targets) throw overLimit('targets', ids, `entities[${i}].ids`, 'ids');
        count(1);
        checkText(buf, a, b, () => `entities[${i}].ids[${k}]`);
      } else if (f === 3) {
        const j = features++;
        if (++names > REQUEST_LIMITS.features)
          throw overLimit('features', names, 'entities', 'entities and features in the request');
        let n = 0;
        eachField(buf, a, b, (g, u, c, d) => {
          if (u !== LEN) return;
          if (g === 1) checkText(buf, c, d, () => `entities[${i}].features[${j}].name`);
          else if (g === 2) {
            const k = n++;
            count(1);
            checkText(buf, c, d, () => `entities[${i}].features[${j}].ids_feature_value[${k}]`);
          }
        });
      }
    });
  };
}
