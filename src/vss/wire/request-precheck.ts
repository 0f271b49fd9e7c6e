/**
 * A pass over a vss.v1 request's protobuf bytes before they are decoded. Decoding builds one string
 * per filter value and id, and replaces invalid UTF-8 with U+FFFD without a word: a 4 MB filter of
 * 500,000 values cost half a million objects before the handler could refuse it, and a mangled name
 * or id was silently looked up as another one. This pass reads tags and lengths only: it counts what
 * the request limits bound (queries, filter values, candidate ids) and refuses past them with the
 * INVALID_ARGUMENT the handler would give, and it checks that every string field is UTF-8, naming the
 * field. Bytes that are not well-formed protobuf are left to the decoder, which says what is wrong.
 */
import { invalidArgument } from '../../platform/errors.js';
import { checkUtf8 as checkText, eachField, LEN } from '../../platform/protobuf/field-scan.js';
import { SEARCH_LIMITS, tooManyFilterValues } from '../serving/request-limits.js';

/** A `Filter` message: field 1 `field`, field 3 `values`; returns its value count. */
function checkFilter(buf: Uint8Array, from: number, to: number, at: () => string): number {
  let values = 0;
  eachField(buf, from, to, (f, type, a, b) => {
    if (type !== LEN) return;
    if (f === 1) checkText(buf, a, b, () => `${at()}.field`);
    else if (f === 3) {
      const k = values++;
      checkText(buf, a, b, () => `${at()}.values[${k}]`);
    }
  });
  return values;
}

/** SearchRequest: field numbers of proto/vss/v1/vss.proto. */
export function precheckSearch(buf: Uint8Array): void {
  let queries = 0;
  let sharedValues = 0;
  let ownValues = 0;
  let sharedFilters = 0;
  let attributes = 0;
  const count = () => {
    // The request's filters are evaluated with every query.
    const total = ownValues + sharedValues * Math.max(1, queries);
    if (total > SEARCH_LIMITS.filterValues) throw tooManyFilterValues(total);
  };
  eachField(buf, 0, buf.length, (field, type, from, to) => {
    if (type !== LEN) return;
    switch (field) {
      case 1:
        return checkText(buf, from, to, () => 'entity');
      case 2:
        return checkText(buf, from, to, () => 'model_name');
      case 3:
        return checkText(buf, from, to, () => 'variant');
      case 4: {
        const i = queries++;
        if (queries > SEARCH_LIMITS.queries) {
          throw invalidArgument(
            `queries: more than ${SEARCH_LIMITS.queries} queries exceed the request limit max_queries (${SEARCH_LIMITS.queries})`,
            'queries',
          );
        }
        let filters = 0;
        eachField(buf, from, to, (f, t, a, b) => {
          if (t !== LEN) return;
          if (f === 1) checkText(buf, a, b, () => `queries[${i}].candidate_id`);
          else if (f === 3) checkText(buf, a, b, () => `queries[${i}].page_token`);
          else if (f === 4) {
            const j = filters++;
            ownValues += checkFilter(buf, a, b, () => `queries[${i}].filters[${j}]`);
          }
        });
        return count();
      }
      case 6: {
        const k = attributes++;
        return checkText(buf, from, to, () => `attributes[${k}]`);
      }
      case 7: {
        const j = sharedFilters++;
        sharedValues += checkFilter(buf, from, to, () => `filters[${j}]`);
        return count();
      }
    }
  });
}

/** GetEmbeddingsRequest (ids: field 3) and ScoreCandidatesRequest (ids: field 4). */
export function precheckLookup(idField: 3 | 4): (buf: Uint8Array) => void {
  return (buf) => {
    let ids = 0;
    eachField(buf, 0, buf.length, (field, type, from, to) => {
      if (type !== LEN) return;
      if (field === 1) checkText(buf, from, to, () => 'entity');
      else if (field === 2) checkText(buf, from, to, () => 'model_name');
      else if (field === idField) {
        const i = ids++;
        if (ids > SEARCH_LIMITS.candidateIds) {
          throw invalidArgument(
            `candidate_ids: more than ${SEARCH_LIMITS.candidateIds} ids exceed the request limit max_candidate_ids (${SEARCH_LIMITS.candidateIds})`,
            'candidate_ids',
          );
        }
        checkText(buf, from, to, () => `candidate_ids[${i}]`);
      }
    });
  };
}
