/**
 * `vss.v1.SimilaritySearch` as this server serves it: requests pre-checked before they are decoded
 * (request-precheck.ts), and GetEmbeddings answers that the handler already encoded in time slices
 * passed through as bytes.
 */
import { type GetEmbeddingsResponse, SimilaritySearchService } from '../../gen/vss/v1/vss.js';
import { precheckLookup, precheckSearch } from '../wire/request-precheck.js';

/** A request decoder that first runs `check` over the bytes (request-precheck.ts). */
function checkedDecoder<T>(decode: (bytes: Buffer) => T, check: (bytes: Uint8Array) => void) {
  return (bytes: Buffer): T => {
    check(bytes);
    return decode(bytes);
  };
}

export const SimilaritySearchAnswers = {
  search: {
    ...SimilaritySearchService.search,
    requestDeserialize: checkedDecoder(SimilaritySearchService.search.requestDeserialize, precheckSearch),
  },
  getEmbeddings: {
    ...SimilaritySearchService.getEmbeddings,
    requestDeserialize: checkedDecoder(
      SimilaritySearchService.getEmbeddings.requestDeserialize,
      precheckLookup(3),
    ),
    // A large answer arrives already encoded (embedding-service.ts).
    responseSerialize: (response: GetEmbeddingsResponse | Buffer): Buffer =>
      Buffer.isBuffer(response)
        ? response
        : SimilaritySearchService.getEmbeddings.responseSerialize(response),
  },
  scoreCandidates: {
    ...SimilaritySearchService.scoreCandidates,
    requestDeserialize: checkedDecoder(
      SimilaritySearchService.scoreCandidates.requestDeserialize,
      precheckLookup(4),
    ),
  },
};
