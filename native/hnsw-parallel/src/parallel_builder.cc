// Inserts many points into one hnswlib graph from several threads at once: hnswlib's addPoint locks
// per node and is built for concurrent inserts (its Python binding's add_items does the same), but
// hnswlib-node, whose graphs the embedded vector DB serves, calls it from one JavaScript thread only.
// The graph build worker (src/platform/vectordb/embedded/graph-build-worker.ts) hands large rounds
// to this builder: the graph is read from and written to hnswlib's own file format, the one
// hnswlib-node reads and writes, compiled from the very headers hnswlib-node ships, and a label
// inserted here is what hnswlib-node's addPoint would have made of it (cosine vectors normalised the
// same way first). What is not the same is the order of the inserts: with more than one thread the
// graph differs from run to run, as any concurrent HNSW build does.
#include <napi.h>

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "addon.h"
#include "hnswlib/hnswlib.h"

namespace {

using lattice::normalize;

class ParallelBuilder : public Napi::ObjectWrap<ParallelBuilder> {
 public:
  static Napi::Object Init(Napi::Env env, Napi::Object exports) {
    Napi::Function func = DefineClass(env, "ParallelBuilder",
                                      {
                                          InstanceMethod("add", &ParallelBuilder::Add),
                                          InstanceMethod("save", &ParallelBuilder::Save),
                                          InstanceMethod("count", &ParallelBuilder::Count),
                                          InstanceMethod("release", &ParallelBuilder::Release),
                                      });
    exports.Set("ParallelBuilder", func);
    return exports;
  }

  // new ParallelBuilder(space, dimension, capacity, m, efConstruction, seed, baseFile?)
  ParallelBuilder(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ParallelBuilder>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 6) {
      Napi::TypeError::New(env, "expected (space, dimension, capacity, m, efConstruction, seed, baseFile?)")
          .ThrowAsJavaScriptException();
      return;
    }
    const std::string space = info[0].As<Napi::String>().Utf8Value();
    dim_ = info[1].As<Napi::Number>().Uint32Value();
    const size_t capacity = info[2].As<Napi::Number>().Uint32Value();
    const size_t m = info[3].As<Napi::Number>().Uint32Value();
    const size_t ef = info[4].As<Napi::Number>().Uint32Value();
    const size_t seed = info[5].As<Napi::Number>().Uint32Value();
    if (space == "l2") {
      space_.reset(new hnswlib::L2Space(dim_));
    } else if (space == "ip" || space == "cosine") {
      space_.reset(new hnswlib::InnerProductSpace(dim_));
      normalize_ = space == "cosine";
    } else {
      Napi::TypeError::New(env, "space must be l2, ip or cosine").ThrowAsJavaScriptException();
      return;
    }
    try {
      if (info.Length() > 6 && info[6].IsString()) {
        index_.reset(new hnswlib::HierarchicalNSW<float>(space_.get(), info[6].As<Napi::String>().Utf8Value(),
                                                        false, capacity, false));
      } else {
        index_.reset(new hnswlib::HierarchicalNSW<float>(space_.get(), capacity, m, ef, seed, false));
      }
    } catch (const std::exception& e) {
      Napi::Error::New(env, e.what()).ThrowAsJavaScriptException();
    }
  }

 private:
  // add(vectors: Float32Array, labels: Uint32Array, threads: number, cancel: Int32Array): number
  // Inserts every label (row i's vector at i * dimension), stopping early once cancel[0] is not 0;
  // returns how many were inserted. Labels already in the graph are updated in place (undeleted).
  Napi::Value Add(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!index_) {
      Napi::Error::New(env, "the builder has no graph").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    Napi::Float32Array vectors = info[0].As<Napi::Float32Array>();
    Napi::Uint32Array labels = info[1].As<Napi::Uint32Array>();
    const size_t threads = std::max<uint32_t>(1, info[2].As<Napi::Number>().Uint32Value());
    Napi::Int32Array cancel = info[3].As<Napi::Int32Array>();
    const size_t count = labels.ElementLength();
    if (vectors.ElementLength() != count * dim_) {
      Napi::RangeError::New(env, "vectors must hold dimension floats per label").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    if (index_->getCurrentElementCount() + count > index_->getMaxElements()) {
      index_->resizeIndex(index_->getCurrentElementCount() + count);
    }
    const float* data = vectors.Data();
    const uint32_t* ids = labels.Data();
    const int32_t* flag = cancel.Data();
    std::atomic<size_t> next(0);
    std::atomic<size_t> done(0);
    std::exception_ptr failure;
    std::mutex failure_lock;
    auto work = [&]() {
      std::vector<float> vec(dim_);
      for (size_t i = next++; i < count; i = next++) {
        if (__atomic_load_n(flag, __ATOMIC_RELAXED) != 0) return;
        try {
          std::copy(data + i * dim_, data + (i + 1) * dim_, vec.begin());
          if (normalize_) normalize(vec.data(), dim_);
          index_->addPoint(vec.data(), static_cast<hnswlib::labeltype>(ids[i]), false);
          done++;
        } catch (...) {
          std::lock_guard<std::mutex> hold(failure_lock);
          if (!failure) failure = std::current_exception();
          next = count;
          return;
        }
      }
    };
    std::vector<std::thread> helpers;
    for (size_t t = 1; t < threads && t < count; t++) helpers.emplace_back(work);
    work();
    for (auto& helper : helpers) helper.join();
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        Napi::Error::New(env, e.what()).ThrowAsJavaScriptException();
        return env.Undefined();
      }
    }
    return Napi::Number::New(env, static_cast<double>(done.load()));
  }

  Napi::Value Save(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!index_) {
      Napi::Error::New(env, "the builder has no graph").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    try {
      index_->saveIndex(info[0].As<Napi::String>().Utf8Value());
    } catch (const std::exception& e) {
      Napi::Error::New(env, e.what()).ThrowAsJavaScriptException();
    }
    return env.Undefined();
  }

  // Frees the graph now rather than whenever the collector finalises this object: V8 does not see
  // the native memory (tens of MB per 100,000 nodes), so it would not hurry.
  Napi::Value Release(const Napi::CallbackInfo& info) {
    index_.reset();
    space_.reset();
    return info.Env().Undefined();
  }

  Napi::Value Count(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(index_ ? index_->getCurrentElementCount() : 0));
  }

  size_t dim_ = 0;
  bool normalize_ = false;
  std::unique_ptr<hnswlib::SpaceInterface<float>> space_;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> index_;
};

}  // namespace

Napi::Object lattice::InitParallelBuilder(Napi::Env env, Napi::Object exports) {
  return ParallelBuilder::Init(env, exports);
}
