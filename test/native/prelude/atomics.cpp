// metal atomics under real contention: several OS threads hammer the same objects (as threadgroups
// of one dispatch do), in "device" memory (a heap buffer reinterpreted as atomic<T>, like a bound
// buffer) and "threadgroup" memory (uninitialised storage shared by the threads). Atomicity is
// checked by totals and by the returned old values forming exact permutations. A mock checked
// pointer (found by ADL, like the execution layer's) proves every access goes through resolve.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "../../../Sources/MSLSim/prelude/mgsim_atomic.h"
#include "check.h"

namespace mgsim {
unsigned simd_lane_id() { return 0; }

// Checked-pointer stand-in: records what resolve was asked for.
struct access_log {
  long reads = 0, writes = 0, elements = 0;
};
inline access_log g_log;
template <class T>
struct test_ptr {
  T *p;
};
template <class T>
T *mgsim_resolve(test_ptr<T> q, size_t count, bool write) {
  (write ? g_log.writes : g_log.reads)++;
  g_log.elements += long(count);
  return q.p;
}
}  // namespace mgsim

using namespace metal;

static_assert(sizeof(atomic_int) == 4 && alignof(atomic_int) == 4 && sizeof(atomic_float) == 4 && sizeof(atomic_uint) == 4, "size of T");
static_assert(sizeof(atomic_ulong) == 8 && sizeof(atomic_bool) == 1, "size of T");
static_assert(std::is_trivially_default_constructible<atomic_int>::value && std::is_standard_layout<atomic_float>::value,
              "threadgroup memory holding atomics is uninitialised");
static_assert(!std::is_copy_constructible<atomic_int>::value && !std::is_copy_assignable<atomic_uint>::value, "not copyable");
static_assert(memory_order_relaxed != memory_order_seq_cst && thread_scope_device != thread_scope_threadgroup, "enums");

namespace {

constexpr int kThreads = 8;
constexpr int kOps = 60000;

template <class F>
void run_threads(F f) {
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) ts.emplace_back(f, t);
  for (auto &t : ts) t.join();
}

// The old values returned by kThreads * kOps increments of 1 must be exactly 0 .. N-1.
template <class T>
bool is_permutation_of_range(std::vector<std::vector<T>> &per_thread) {
  std::vector<T> all;
  for (auto &v : per_thread) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i] != T(i)) return false;
  return true;
}

void test_device_memory() {
  // A "buffer": raw bytes, reinterpreted as an array of atomics, as a bound buffer is.
  std::unique_ptr<unsigned char[]> bytes(new unsigned char[256]);
  std::memset(bytes.get(), 0xab, 256);
  auto *ai = reinterpret_cast<atomic_int *>(bytes.get());
  auto *au = reinterpret_cast<atomic_uint *>(bytes.get() + 16);
  auto *af = reinterpret_cast<atomic_float *>(bytes.get() + 32);
  auto *al = reinterpret_cast<atomic_ulong *>(bytes.get() + 64);
  atomic_store_explicit(&ai[0], 0, memory_order_relaxed);
  atomic_store_explicit(&ai[1], 1000000000, memory_order_relaxed);
  atomic_store_explicit(&ai[2], 0, memory_order_relaxed);
  atomic_store_explicit(&au[0], 0u, memory_order_relaxed);
  atomic_store_explicit(&au[1], 0xffffffffu, memory_order_relaxed);
  atomic_store_explicit(&au[2], 0u, memory_order_relaxed);
  atomic_store_explicit(&af[0], 0.0f, memory_order_relaxed);
  atomic_store_explicit(&af[1], 0.0f, memory_order_relaxed);
  // atomic_ulong has only atomic_max_explicit / atomic_min_explicit (MSL 6.15.4.6): start values by
  // plain stores, results by plain loads.
  ulong *const al_raw = reinterpret_cast<ulong *>(bytes.get() + 64);
  al_raw[0] = 0ul;
  al_raw[1] = ~0ul;

  std::vector<std::vector<int>> olds(kThreads);
  std::vector<std::vector<float>> fold(kThreads);
  run_threads([&](int t) {
    olds[t].reserve(kOps);
    fold[t].reserve(kOps);
    for (int i = 0; i < kOps; ++i) {
      olds[t].push_back(atomic_fetch_add_explicit(&ai[0], 1, memory_order_relaxed));
      atomic_fetch_sub_explicit(&ai[1], 3, memory_order_relaxed);
      fold[t].push_back(atomic_fetch_add_explicit(&af[0], 1.0f, memory_order_relaxed));
      atomic_fetch_sub_explicit(&af[1], 0.5f, memory_order_relaxed);
      const ulong key = (ulong(uint32_t(t * kOps + i) * 2654435761u) << 32) | ulong(t * kOps + i);
      atomic_max_explicit(&al[0], key, memory_order_relaxed);
      atomic_min_explicit(&al[1], key, memory_order_relaxed);
      // compare-exchange increment loop (the MSL idiom for custom atomic updates)
      int expected = atomic_load_explicit(&ai[2], memory_order_relaxed);
      while (!atomic_compare_exchange_weak_explicit(&ai[2], &expected, expected + 2, memory_order_relaxed,
                                                    memory_order_relaxed)) {
      }
    }
    // bit operations: each thread owns bits t and t + 8
    for (int i = 0; i < 1000; ++i) {
      atomic_fetch_or_explicit(&au[0], (1u << t) | (1u << (t + 8)), memory_order_relaxed);
      atomic_fetch_and_explicit(&au[1], ~(1u << (t + 16)), memory_order_relaxed);
      atomic_fetch_xor_explicit(&au[2], 1u << t, memory_order_relaxed);  // an even count cancels
    }
  });
  const long n = long(kThreads) * kOps;
  CHECK(atomic_load_explicit(&ai[0], memory_order_relaxed) == n);
  CHECK(is_permutation_of_range(olds));
  CHECK(atomic_load_explicit(&ai[1], memory_order_relaxed) == 1000000000 - 3 * n);
  CHECK(atomic_load_explicit(&ai[2], memory_order_relaxed) == 2 * n);
  CHECK(atomic_load_explicit(&af[0], memory_order_relaxed) == float(n));  // exact below 2^24
  CHECK(is_permutation_of_range(fold));
  CHECK(atomic_load_explicit(&af[1], memory_order_relaxed) == -0.5f * float(n));
  ulong kmax = 0, kmin = ~0ul;
  for (long j = 0; j < n; ++j) {
    const ulong key = (ulong(uint32_t(j) * 2654435761u) << 32) | ulong(j);
    kmax = std::max(kmax, key);
    kmin = std::min(kmin, key);
  }
  CHECK(al_raw[0] == kmax && al_raw[1] == kmin);
  CHECK(atomic_load_explicit(&au[0], memory_order_relaxed) == 0xffffu);
  CHECK(atomic_load_explicit(&au[1], memory_order_relaxed) == 0xff00ffffu);
  CHECK(atomic_load_explicit(&au[2], memory_order_relaxed) == 0u);
}

void test_threadgroup_memory() {
  // Threadgroup storage: uninitialised, shared by the "threads" of a group; initialised by a store.
  alignas(16) unsigned char storage[64];
  auto *mn = reinterpret_cast<atomic_int *>(storage);
  auto *mx = reinterpret_cast<atomic_uint *>(storage + 4);
  auto *slot = reinterpret_cast<atomic_int *>(storage + 16);
  atomic_store_explicit(mn, INT32_MAX, memory_order_relaxed);
  atomic_store_explicit(mx, 0u, memory_order_relaxed);
  atomic_store_explicit(slot, -1, memory_order_relaxed);
  std::vector<int> tmin(kThreads, INT32_MAX);
  std::vector<uint> tmax(kThreads, 0);
  std::vector<std::vector<int>> swapped(kThreads);
  run_threads([&](int t) {
    uint32_t s = 0x9e3779b9u * uint32_t(t + 1);
    for (int i = 0; i < kOps; ++i) {
      s = s * 1664525u + 1013904223u;
      const int v = int(s >> 1) - (1 << 30);
      const uint w = s ^ (s >> 7);
      tmin[t] = std::min(tmin[t], v);
      tmax[t] = std::max(tmax[t], w);
      atomic_fetch_min_explicit(mn, v, memory_order_relaxed);
      atomic_fetch_max_explicit(mx, w, memory_order_relaxed);
      if (i < 2000) swapped[t].push_back(atomic_exchange_explicit(slot, t * 2000 + i, memory_order_relaxed));
    }
  });
  CHECK(atomic_load_explicit(mn, memory_order_relaxed) == *std::min_element(tmin.begin(), tmin.end()));
  CHECK(atomic_load_explicit(mx, memory_order_relaxed) == *std::max_element(tmax.begin(), tmax.end()));
  // exchange: the returned values plus the final one are every value stored, plus the initial -1
  std::vector<int> seen;
  for (auto &v : swapped) seen.insert(seen.end(), v.begin(), v.end());
  seen.push_back(atomic_load_explicit(slot, memory_order_relaxed));
  std::sort(seen.begin(), seen.end());
  bool perm = seen.size() == size_t(kThreads) * 2000 + 1 && seen[0] == -1;
  for (size_t i = 1; perm && i < seen.size(); ++i) perm = seen[i] == int(i - 1);
  CHECK(perm);
}

void test_single_thread_semantics() {
  atomic_int a;
  atomic_store_explicit(&a, 5, memory_order_relaxed);
  int expected = 4;
  CHECK(!atomic_compare_exchange_weak_explicit(&a, &expected, 9, memory_order_relaxed, memory_order_relaxed));
  CHECK(expected == 5);  // failure reports the current value
  CHECK(atomic_compare_exchange_weak_explicit(&a, &expected, 9, memory_order_relaxed, memory_order_relaxed));
  CHECK(atomic_exchange_explicit(&a, 1, memory_order_seq_cst) == 9 && atomic_load_explicit(&a, memory_order_acquire) == 1);
  CHECK(atomic_fetch_add_explicit(&a, INT32_MAX, memory_order_relaxed) == 1);
  CHECK(atomic_load_explicit(&a, memory_order_relaxed) == INT32_MIN);  // wraps
  atomic_uint u;
  atomic_store_explicit(&u, 0u, memory_order_relaxed);
  CHECK(atomic_fetch_sub_explicit(&u, 1, memory_order_relaxed) == 0u && atomic_load_explicit(&u, memory_order_relaxed) == 0xffffffffu);
  atomic_float f;
  atomic_store_explicit(&f, 1.5f, memory_order_relaxed);
  CHECK(atomic_fetch_add_explicit(&f, 0.25f, memory_order_relaxed) == 1.5f && atomic_fetch_sub_explicit(&f, 0.25f, memory_order_relaxed) == 1.75f &&
        atomic_load_explicit(&f, memory_order_relaxed) == 1.5f);
  float fe = 1.5f;
  CHECK(atomic_compare_exchange_weak_explicit(&f, &fe, -0.0f, memory_order_relaxed, memory_order_relaxed));
  fe = 0.0f;  // compares bit patterns: +0 is not -0
  CHECK(!atomic_compare_exchange_weak_explicit(&f, &fe, 2.0f, memory_order_relaxed, memory_order_relaxed) && std::signbit(fe));
  atomic_bool b;
  atomic_store_explicit(&b, false, memory_order_relaxed);
  CHECK(!atomic_exchange_explicit(&b, true, memory_order_relaxed) && atomic_load_explicit(&b, memory_order_relaxed));
  volatile atomic_int va;  // MSL's signatures take volatile pointers
  atomic_store_explicit(&va, 3, memory_order_relaxed);
  CHECK(atomic_fetch_add_explicit(&va, 2, memory_order_relaxed) == 3 && atomic_load_explicit(&va, memory_order_relaxed) == 5);
  const atomic_int *ca = &a;
  CHECK(atomic_load_explicit(ca, memory_order_relaxed) == INT32_MIN);
  atomic_thread_fence(0, memory_order_seq_cst, thread_scope_device);
  atomic_thread_fence(1u, memory_order_seq_cst);
}

void test_resolve_hook() {
  atomic_int storage;
  mgsim::test_ptr<atomic_int> p{&storage};
  mgsim::g_log = {};
  atomic_store_explicit(p, 7, memory_order_relaxed);
  CHECK(mgsim::g_log.writes == 1 && mgsim::g_log.reads == 0 && mgsim::g_log.elements == 1);
  CHECK(atomic_load_explicit(p, memory_order_relaxed) == 7 && mgsim::g_log.reads == 1);
  atomic_fetch_add_explicit(p, 1, memory_order_relaxed);
  atomic_fetch_max_explicit(p, 100, memory_order_relaxed);
  atomic_exchange_explicit(p, 3, memory_order_relaxed);
  int e = 3;
  atomic_compare_exchange_weak_explicit(p, &e, 4, memory_order_relaxed, memory_order_relaxed);
  CHECK(mgsim::g_log.writes == 5 && mgsim::g_log.reads == 1 && storage.mg_v == 4);
  mgsim::test_ptr<atomic_float> pf{reinterpret_cast<atomic_float *>(&storage)};
  atomic_store_explicit(pf, 2.5f, memory_order_relaxed);
  CHECK(atomic_fetch_add_explicit(pf, 1, memory_order_relaxed) == 2.5f && mgsim::g_log.writes == 7);
}

}  // namespace

int main() {
  test_single_thread_semantics();
  test_resolve_hook();
  test_device_memory();
  test_threadgroup_memory();
  return check::finish("atomics");
}
