// The embedded vector DB's native addon (native/hnsw-parallel): the parallel graph builder and the
// serving graph whose searches run off the JavaScript thread. Both are compiled from the hnswlib
// headers hnswlib-node ships, so their graph files are hnswlib-node's.
#include <napi.h>

#include "addon.h"

namespace {

Napi::Object InitAll(Napi::Env env, Napi::Object exports) {
  lattice::InitParallelBuilder(env, exports);
  return lattice::InitHnswIndex(env, exports);
}

}  // namespace

NODE_API_MODULE(hnsw_parallel, InitAll)
