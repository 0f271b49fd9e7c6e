// The serving HNSW graph of one collection (src/platform/vectordb/embedded/index/hnsw-graph.ts),
// whose searches can run off the JavaScript thread. hnswlib-node, which served the graphs before,
// searches on the calling thread only, so a vss process answered any number of concurrent searches
// with one core (issue 38). This class is hnswlib's HierarchicalNSW compiled from the very headers
// hnswlib-node ships: the same file format both ways, the same graph for the same inserts (cosine
// vectors normalised as hnswlib-node does), the same answers for the same search.
//
// Threads. Inserts, deletes, resizes and reads of a file come from the JavaScript thread only; a
// search runs there (`search`) or on the search pool (`searchAsync`, a promise). A search reads the
// graph without hnswlib's locks (its searchKnn takes none), so an insert must not run beside it:
// every search holds the graph's lock shared, every write holds it alone (GraphLock). A search owns
// copies of everything it reads but the graph (the query, the filter's words) and holds the graph
// itself by a shared pointer, so the JavaScript side may change its buffers, swap the graph for
// another or let it be collected while the search runs.
//
// Width. hnswlib keeps one search width per graph (setEf); concurrent searches each need their own,
// so the k-nearest walk is written here, as hnswlib's searchKnn does it, with the width per call.
//
// The pool. A dedicated pool of threads, one per core (os.availableParallelism(), set from
// JavaScript before the first search), rather than libuv's thread pool: that one has 4 threads
// unless UV_THREADPOOL_SIZE is set before its first use (which a library cannot ensure: any fs call
// before it starts the pool), so it would cap searches at 4 cores on a larger machine, and it serves
// the filesystem too: the write-ahead log's fdatasync, snapshot and graph file I/O would queue
// behind searches (acknowledged writes waiting on search load) and searches behind a slow fsync.
// Results go back through one thread-safe function per JavaScript environment, referenced (keeping
// the event loop alive) only while searches are in flight.
#include <napi.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "addon.h"
#include "hnswlib/hnswlib.h"

namespace {

using Hnsw = hnswlib::HierarchicalNSW<float>;

// A readers-writer lock that lets a waiting writer in before later readers. std::shared_mutex on
// glibc prefers readers: with searches arriving on every pool thread, an insert on the JavaScript
// thread could wait for the whole queue of searches. Here a writer holds the gate while it waits,
// so it waits for the searches already running (one per pool thread) and no more.
class GraphLock {
 public:
  void lock() {
    gate_.lock();
    rw_.lock();
    gate_.unlock();
  }
  void unlock() { rw_.unlock(); }
  void lock_shared() {
    gate_.lock();
    rw_.lock_shared();
    gate_.unlock();
  }
  void unlock_shared() { rw_.unlock_shared(); }

 private:
  std::mutex gate_;
  std::shared_mutex rw_;
};

// One graph, shared by its JavaScript object and the searches in flight on it.
struct Graph {
  size_t dim = 0;
  bool normalize = false;
  std::unique_ptr<hnswlib::SpaceInterface<float>> space;
  std::unique_ptr<Hnsw> index;  // null until init or a read
  GraphLock lock;
};

// Labels allowed by a search: bit (label % 32) of word (label / 32). A copy of the caller's words.
class BitsetFilter : public hnswlib::BaseFilterFunctor {
 public:
  BitsetFilter(const uint32_t* words, size_t count) : words_(words, words + count) {}
  bool operator()(hnswlib::labeltype label) override {
    const size_t word = static_cast<size_t>(label >> 5);
    return word < words_.size() && ((words_[word] >> (label & 31)) & 1u) != 0;
  }

 private:
  std::vector<uint32_t> words_;
};

struct Query {
  std::vector<float> vector;
  size_t k = 0;
  size_t ef = 0;
  std::unique_ptr<BitsetFilter> filter;
};

// Nearest first.
struct Hits {
  std::vector<uint32_t> labels;
  std::vector<float> distances;
};

// hnswlib's searchKnn with the width `query.ef` (at least k) instead of the graph's ef_, and without
// its shared metric counters (atomics every search thread would contend on). The caller holds the
// graph's lock shared. The answer is searchKnn's, order of ties included: the last step goes
// through a queue of (distance, label) as searchKnn's result does.
void Knn(const Hnsw& index, Query& query, Hits& hits) {
  using hnswlib::tableint;
  if (index.cur_element_count == 0) return;
  const void* data = query.vector.data();
  tableint current = index.enterpoint_node_;
  float distance = index.fstdistfunc_(data, index.getDataByInternalId(current), index.dist_func_param_);
  for (int level = index.maxlevel_; level > 0; level--) {
    bool changed = true;
    while (changed) {
      changed = false;
      hnswlib::linklistsizeint* links = index.get_linklist(current, level);
      const int size = index.getListCount(links);
      const tableint* neighbours = reinterpret_cast<const tableint*>(links + 1);
      for (int i = 0; i < size; i++) {
        const tableint candidate = neighbours[i];
        if (candidate > index.max_elements_) throw std::runtime_error("cand error");
        const float d = index.fstdistfunc_(data, index.getDataByInternalId(candidate), index.dist_func_param_);
        if (d < distance) {
          distance = d;
          current = candidate;
          changed = true;
        }
      }
    }
  }
  const size_t width = std::max(query.ef, query.k);
  auto top = index.num_deleted_ == 0 && !query.filter
                 ? index.searchBaseLayerST<true>(current, data, width, nullptr)
                 : index.searchBaseLayerST<false>(current, data, width, query.filter.get());
  while (top.size() > query.k) top.pop();
  std::priority_queue<std::pair<float, hnswlib::labeltype>> result;
  for (; !top.empty(); top.pop()) result.emplace(top.top().first, index.getExternalLabel(top.top().second));
  const size_t count = result.size();
  hits.labels.resize(count);
  hits.distances.resize(count);
  for (size_t i = count; i-- > 0; result.pop()) {
    hits.distances[i] = result.top().first;
    hits.labels[i] = static_cast<uint32_t>(result.top().second);
  }
}

Napi::Object HitsObject(Napi::Env env, const Hits& hits) {
  const size_t count = hits.labels.size();
  Napi::Uint32Array labels = Napi::Uint32Array::New(env, count);
  Napi::Float32Array distances = Napi::Float32Array::New(env, count);
  std::copy(hits.labels.begin(), hits.labels.end(), labels.Data());
  std::copy(hits.distances.begin(), hits.distances.end(), distances.Data());
  Napi::Object result = Napi::Object::New(env);
  result.Set("labels", labels);
  result.Set("distances", distances);
  return result;
}

// --- the search pool ------------------------------------------------------------------------------

struct SearchJob {
  std::shared_ptr<Graph> graph;
  Query query;
  Hits hits;
  std::string error;
  napi_deferred deferred = nullptr;
};

// What the pool threads of one JavaScript environment share with it.
struct PoolState {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<SearchJob*> queue;
  bool stopping = false;
  // Back to the JavaScript thread; closed once the environment has finalised it.
  napi_threadsafe_function done = nullptr;
  bool closed = false;
};

// The addon's state in one JavaScript environment (the main thread, or a worker thread).
struct AddonData {
  size_t threads = 0;  // the pool's size once started; 0: one per hardware thread
  std::shared_ptr<PoolState> pool;
  size_t inFlight = 0;  // JavaScript thread only: searches whose promise is not settled

  ~AddonData() {
    if (!pool) return;
    {
      std::lock_guard<std::mutex> hold(pool->mutex);
      pool->stopping = true;
    }
    pool->wake.notify_all();
  }
};

void RunSearch(SearchJob& job) {
  try {
    std::shared_lock<GraphLock> hold(job.graph->lock);
    if (!job.graph->index) throw std::runtime_error("the graph is not initialised");
    Knn(*job.graph->index, job.query, job.hits);
  } catch (const std::exception& e) {
    job.error = e.what();
  }
}

void PoolThread(std::shared_ptr<PoolState> pool) {
  for (;;) {
    SearchJob* job;
    {
      std::unique_lock<std::mutex> hold(pool->mutex);
      pool->wake.wait(hold, [&] { return pool->stopping || !pool->queue.empty(); });
      if (pool->stopping) {
        for (SearchJob* left : pool->queue) delete left;
        pool->queue.clear();
        return;
      }
      job = pool->queue.front();
      pool->queue.pop_front();
    }
    RunSearch(*job);
    std::lock_guard<std::mutex> hold(pool->mutex);
    if (pool->closed || napi_call_threadsafe_function(pool->done, job, napi_tsfn_nonblocking) != napi_ok) {
      delete job;
    }
  }
}

// On the JavaScript thread: settles a search's promise. `env` is null when the environment is
// going away with the search still queued: there is nothing to settle then.
void SettleSearch(napi_env env, napi_value, void* context, void* data) {
  std::unique_ptr<SearchJob> job(static_cast<SearchJob*>(data));
  if (env == nullptr) return;
  AddonData* addon = static_cast<AddonData*>(context);
  if (--addon->inFlight == 0) napi_unref_threadsafe_function(env, addon->pool->done);
  Napi::Env js(env);
  Napi::HandleScope scope(js);
  if (job->error.empty()) {
    napi_resolve_deferred(env, job->deferred, HitsObject(js, job->hits));
  } else {
    napi_reject_deferred(env, job->deferred, Napi::Error::New(js, job->error).Value());
  }
}

void ClosePool(napi_env, void* data, void*) {
  std::unique_ptr<std::shared_ptr<PoolState>> pool(static_cast<std::shared_ptr<PoolState>*>(data));
  {
    std::lock_guard<std::mutex> hold((*pool)->mutex);
    (*pool)->closed = true;
    (*pool)->stopping = true;
  }
  (*pool)->wake.notify_all();
}

AddonData* DataOf(Napi::Env env) { return env.GetInstanceData<AddonData>(); }

// Starts the pool threads and the way back; false (a JavaScript exception pending) when it cannot.
bool StartPool(Napi::Env env, AddonData* addon) {
  auto pool = std::make_shared<PoolState>();
  auto* finalizeData = new std::shared_ptr<PoolState>(pool);
  napi_status status = napi_create_threadsafe_function(
      env, nullptr, nullptr, Napi::String::New(env, "lattice:hnsw-search"), 0, 1, finalizeData, ClosePool,
      addon, SettleSearch, &pool->done);
  if (status != napi_ok) {
    delete finalizeData;
    Napi::Error::New(env, "could not create the search pool's completion queue").ThrowAsJavaScriptException();
    return false;
  }
  napi_unref_threadsafe_function(env, pool->done);
  if (addon->threads == 0) addon->threads = std::max(1u, std::thread::hardware_concurrency());
  for (size_t i = 0; i < addon->threads; i++) std::thread(PoolThread, pool).detach();
  addon->pool = pool;
  return true;
}

// --- the JavaScript class -------------------------------------------------------------------------

class ReadWorker : public Napi::AsyncWorker {
 public:
  ReadWorker(Napi::Env env, std::shared_ptr<Graph> graph, std::string path)
      : Napi::AsyncWorker(env, "lattice:hnsw-read"),
        deferred_(Napi::Promise::Deferred::New(env)),
        graph_(std::move(graph)),
        path_(std::move(path)) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  // On libuv's thread pool (file I/O), into an index nothing else holds yet.
  void Execute() override {
    try {
      loaded_.reset(new Hnsw(graph_->space.get(), path_, false, 0, false));
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override {
    {
      std::unique_lock<GraphLock> hold(graph_->lock);
      graph_->index = std::move(loaded_);
    }
    deferred_.Resolve(Env().Undefined());
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::shared_ptr<Graph> graph_;
  std::string path_;
  std::unique_ptr<Hnsw> loaded_;
};

class HnswIndex : public Napi::ObjectWrap<HnswIndex> {
 public:
  static Napi::Object Init(Napi::Env env, Napi::Object exports) {
    Napi::Function func = DefineClass(env, "HnswIndex",
                                      {
                                          InstanceMethod("init", &HnswIndex::InitIndex),
                                          InstanceMethod("readSync", &HnswIndex::ReadSync),
                                          InstanceMethod("read", &HnswIndex::Read),
                                          InstanceMethod("save", &HnswIndex::Save),
                                          InstanceMethod("resize", &HnswIndex::Resize),
                                          InstanceMethod("capacity", &HnswIndex::Capacity),
                                          InstanceMethod("count", &HnswIndex::Count),
                                          InstanceMethod("add", &HnswIndex::Add),
                                          InstanceMethod("markDelete", &HnswIndex::MarkDelete),
                                          InstanceMethod("unmarkDelete", &HnswIndex::UnmarkDelete),
                                          InstanceMethod("search", &HnswIndex::Search),
                                          InstanceMethod("searchAsync", &HnswIndex::SearchAsync),
                                      });
    exports.Set("HnswIndex", func);
    exports.Set("setSearchThreads", Napi::Function::New(env, &HnswIndex::SetSearchThreads));
    env.SetInstanceData<AddonData>(new AddonData());
    return exports;
  }

  // new HnswIndex(space, dimension): an empty graph until init or a read.
  explicit HnswIndex(const Napi::CallbackInfo& info) : Napi::ObjectWrap<HnswIndex>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsString() || !info[1].IsNumber()) {
      Napi::TypeError::New(env, "expected (space, dimension)").ThrowAsJavaScriptException();
      return;
    }
    const std::string space = info[0].As<Napi::String>().Utf8Value();
    auto graph = std::make_shared<Graph>();
    graph->dim = info[1].As<Napi::Number>().Uint32Value();
    if (space == "l2") {
      graph->space.reset(new hnswlib::L2Space(graph->dim));
    } else if (space == "ip" || space == "cosine") {
      graph->space.reset(new hnswlib::InnerProductSpace(graph->dim));
      graph->normalize = space == "cosine";
    } else {
      Napi::TypeError::New(env, "space must be l2, ip or cosine").ThrowAsJavaScriptException();
      return;
    }
    graph_ = std::move(graph);
  }

 private:
  // setSearchThreads(threads): the pool's size, before its first search; returns the size it has
  // or will have (a started pool keeps its size).
  static Napi::Value SetSearchThreads(const Napi::CallbackInfo& info) {
    AddonData* addon = DataOf(info.Env());
    if (!addon->pool && info.Length() > 0 && info[0].IsNumber()) {
      addon->threads = std::max<uint32_t>(1, info[0].As<Napi::Number>().Uint32Value());
    }
    const size_t threads = addon->threads ? addon->threads : std::max(1u, std::thread::hardware_concurrency());
    return Napi::Number::New(info.Env(), static_cast<double>(threads));
  }

  // Throws and answers false unless the graph has an index.
  bool Ready(Napi::Env env) {
    if (graph_ && graph_->index) return true;
    Napi::Error::New(env, "the graph is not initialised (init or read it first)").ThrowAsJavaScriptException();
    return false;
  }

  // init(capacity, m, efConstruction, seed)
  Napi::Value InitIndex(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!graph_) return env.Undefined();
    if (info.Length() < 4) {
      Napi::TypeError::New(env, "expected (capacity, m, efConstruction, seed)").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    const size_t capacity = info[0].As<Napi::Number>().Uint32Value();
    const size_t m = info[1].As<Napi::Number>().Uint32Value();
    const size_t ef = info[2].As<Napi::Number>().Uint32Value();
    const size_t seed = info[3].As<Napi::Number>().Uint32Value();
    try {
      std::unique_ptr<Hnsw> index(new Hnsw(graph_->space.get(), capacity, m, ef, seed, false));
      std::unique_lock<GraphLock> hold(graph_->lock);
      graph_->index = std::move(index);
    } catch (const std::exception& e) {
      Napi::Error::New(env, e.what()).ThrowAsJavaScriptException();
    }
    return env.Undefined();
  }

  Napi::Value ReadSync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!graph_) return env.Undefined();
    try {
      std::unique_ptr<Hnsw> index(
          new Hnsw(graph_->space.get(), info[0].As<Napi::String>().Utf8Value(), false, 0, false));
      std::unique_lock<GraphLock> hold(graph_->lock);
      graph_->index = std::move(index);
    } catch (const std::exception& e) {
      Napi::Error::New(env, e.what()).ThrowAsJavaScriptException();
    }
    return env.Undefined();
  }

  // read(path): Promise<void>, the file read on libuv's thread pool.
  Napi::Value Read(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!graph_) return env.Undefined();
    if (info.Length() < 1 || !info[0].IsString()) {
      Napi::TypeError::New(env, "expected (path)").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    auto* worker = new ReadWorker(env, graph_, info[0].As<Napi::String>().Utf8Value());
    Napi::Promise promise = worker->Promise();
    worker->Queue();
    return promise;
  }

  // A save only reads the graph: searches go on beside it.
  Napi::Value Save(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!Ready(env)) return env.Undefined();
    try {
      std::shared_lock<GraphLock> hold(graph_->lock);
      graph_->index->saveIndex(info[0].As<Napi::String>().Utf8Value());
    } catch (const std::exception& e) {
      Napi::Error::New(env, e.what()).ThrowAsJavaScriptException();
    }
    return env.Undefined();
  }

  Napi::Value Resize(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!Ready(env)) return env.Undefined();
    const size_t capacity = info[0].As<Napi::Number>().Uint32Value();
    try {
      std::unique_lock<GraphLock> hold(graph_->lock);
      graph_->index->resizeIndex(capacity);
    } catch (const std::exception& e) {
      Napi::Error::New(env, e.what()).ThrowAsJavaScriptException();
    }
    return env.Undefined();
  }

  // Written on this thread only, so read without the lock.
  Napi::Value Capacity(const Napi::CallbackInfo& info) {
    const size_t capacity = graph_ && graph_->index ? graph_->index->max_elements_ : 0;
    return Napi::Number::New(info.Env(), static_cast<double>(capacity));
  }

  // Nodes in the graph, deleted ones included.
  Napi::Value Count(const Napi::CallbackInfo& info) {
    const size_t count = graph_ && graph_->index ? graph_->index->cur_element_count.load() : 0;
    return Napi::Number::New(info.Env(), static_cast<double>(count));
  }

  // The query's floats (normalised for cosine), or false with an exception pending.
  bool VectorArg(Napi::Env env, const Napi::Value& value, std::vector<float>& out) {
    if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
      Napi::TypeError::New(env, "the vector must be a Float32Array").ThrowAsJavaScriptException();
      return false;
    }
    Napi::Float32Array vector = value.As<Napi::Float32Array>();
    if (vector.ElementLength() != graph_->dim) {
      Napi::RangeError::New(env, "the vector must have " + std::to_string(graph_->dim) + " floats")
          .ThrowAsJavaScriptException();
      return false;
    }
    out.assign(vector.Data(), vector.Data() + graph_->dim);
    if (graph_->normalize) lattice::normalize(out.data(), graph_->dim);
    return true;
  }

  // add(vector, label): inserts the label, or moves it to the new vector and undeletes it when the
  // graph has it (hnswlib's addPoint without replacement of deleted nodes, as hnswlib-node calls it).
  Napi::Value Add(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::vector<float> vector;
    if (!Ready(env) || !VectorArg(env, info[0], vector)) return env.Undefined();
    const uint32_t label = info[1].As<Napi::Number>().Uint32Value();
    try {
      std::unique_lock<GraphLock> hold(graph_->lock);
      graph_->index->addPoint(vector.data(), static_cast<hnswlib::labeltype>(label), false);
    } catch (const std::exception& e) {
      Napi::Error::New(env, e.what()).ThrowAsJavaScriptException();
    }
    return env.Undefined();
  }

  Napi::Value MarkDelete(const Napi::CallbackInfo& info) { return Mark(info, true); }
  Napi::Value UnmarkDelete(const Napi::CallbackInfo& info) { return Mark(info, false); }

  Napi::Value Mark(const Napi::CallbackInfo& info, bool deleted) {
    Napi::Env env = info.Env();
    if (!Ready(env)) return env.Undefined();
    const uint32_t label = info[0].As<Napi::Number>().Uint32Value();
    try {
      std::unique_lock<GraphLock> hold(graph_->lock);
      if (deleted) {
        graph_->index->markDelete(label);
      } else {
        graph_->index->unmarkDelete(label);
      }
    } catch (const std::exception& e) {
      Napi::Error::New(env, e.what()).ThrowAsJavaScriptException();
    }
    return env.Undefined();
  }

  // (query: Float32Array, k, ef, filter?: Uint32Array) as a Query, or false with an exception pending.
  bool QueryArgs(const Napi::CallbackInfo& info, Query& query) {
    Napi::Env env = info.Env();
    if (!Ready(env) || !VectorArg(env, info[0], query.vector)) return false;
    if (info.Length() < 3 || !info[1].IsNumber() || !info[2].IsNumber()) {
      Napi::TypeError::New(env, "expected (query, k, ef, filter?)").ThrowAsJavaScriptException();
      return false;
    }
    query.k = info[1].As<Napi::Number>().Uint32Value();
    query.ef = info[2].As<Napi::Number>().Uint32Value();
    if (info.Length() > 3 && !info[3].IsUndefined()) {
      if (!info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
        Napi::TypeError::New(env, "the filter must be a Uint32Array of label bits").ThrowAsJavaScriptException();
        return false;
      }
      Napi::Uint32Array words = info[3].As<Napi::Uint32Array>();
      query.filter.reset(new BitsetFilter(words.Data(), words.ElementLength()));
    }
    return true;
  }

  // search(query, k, ef, filter?): { labels: Uint32Array, distances: Float32Array }, on this thread.
  Napi::Value Search(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    SearchJob job;
    if (!QueryArgs(info, job.query)) return env.Undefined();
    job.graph = graph_;
    RunSearch(job);
    if (!job.error.empty()) {
      Napi::Error::New(env, job.error).ThrowAsJavaScriptException();
      return env.Undefined();
    }
    return HitsObject(env, job.hits);
  }

  // searchAsync(query, k, ef, filter?): a promise of search's answer, searched on the pool.
  Napi::Value SearchAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::unique_ptr<SearchJob> job(new SearchJob());
    if (!QueryArgs(info, job->query)) return env.Undefined();
    AddonData* addon = DataOf(env);
    if (!addon->pool && !StartPool(env, addon)) return env.Undefined();
    job->graph = graph_;
    napi_value promise;
    if (napi_create_promise(env, &job->deferred, &promise) != napi_ok) {
      Napi::Error::New(env, "could not create a promise").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    if (addon->inFlight++ == 0) napi_ref_threadsafe_function(env, addon->pool->done);
    {
      std::lock_guard<std::mutex> hold(addon->pool->mutex);
      addon->pool->queue.push_back(job.release());
    }
    addon->pool->wake.notify_one();
    return Napi::Value(env, promise);
  }

  std::shared_ptr<Graph> graph_;
};

}  // namespace

Napi::Object lattice::InitHnswIndex(Napi::Env env, Napi::Object exports) { return HnswIndex::Init(env, exports); }
