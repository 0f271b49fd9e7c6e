// What the addon's two classes share: their registration, and the normalisation of cosine vectors.
#pragma once

#include <napi.h>

#include <cmath>
#include <cstddef>
#include <numeric>

namespace lattice {

// ParallelBuilder (parallel_builder.cc): many inserts into one graph on several threads.
Napi::Object InitParallelBuilder(Napi::Env env, Napi::Object exports);
// HnswIndex (hnsw_index.cc): the serving graph, searched on a pool of threads.
Napi::Object InitHnswIndex(Napi::Env env, Napi::Object exports);

// hnswlib-node's normalisation of a cosine vector (its addon.cc, normalizePoint), float for float:
// a vector inserted or searched here must be the one hnswlib-node would have used.
inline void normalize(float* vec, size_t dim) {
  const float norm = std::sqrt(std::fabs(std::inner_product(vec, vec + dim, vec, 0.0f)));
  if (norm > 0.0f) {
    for (size_t i = 0; i < dim; i++) vec[i] /= norm;
  }
}

}  // namespace lattice
