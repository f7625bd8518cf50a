// mgsim_exec.h — the execution side of the MSL prelude: the ABI shared with the simulator host,
// thread attributes, barriers, simd collectives and checked device pointers.
//
// The host library (Sources/MSLSim/*.cpp) includes only the ABI part (MGSIM_ABI_ONLY); kernels
// compiled by the simulator include all of it through mgsim_prelude.h.
#ifndef MGSIM_EXEC_H
#define MGSIM_EXEC_H

#include <stddef.h>
#include <stdint.h>

namespace mgsim {
namespace abi {

// Bumped whenever a struct below changes: cached objects built against another layout are rebuilt.
constexpr uint32_t kVersion = 11;
constexpr uint32_t kMaxBindings = 31;
constexpr uint32_t kSimdWidth = 32;

enum block_kind : uint32_t { block_barrier = 1, block_simd = 2 };

struct host_api;

// Race detection (checked mode) keeps, for memory a dispatch touches, who last wrote it (and, for
// threadgroup memory, read it) and in which barrier interval.
//
// Device memory: one 64-bit record per granule of a bound buffer (the granule is the binding's
// element size, at most 4 bytes):
//   bits 0-23 the writer's threadgroup id, 24-35 its barrier interval (4095: no longer tracked),
//   36-45 the writer (thread index in threadgroup), 46-59 the source line (0 if unknown or past
//   16383), 60-63 the granule's bytes it wrote (0: written by several threads, bytes each: no
//   longer compared).
// Threadgroup ids are handed out per dispatch, increasing, from one 24-bit space: a dispatch owns
// the ids from group_lo (race_state) on, its threadgroup of linear index i is group_lo + i. Its
// record memory holds records of dispatches that began earlier only (the host takes it with the
// ids, dispatch.cpp CheckMemory), so a record whose id is below group_lo (0 included) was written
// by an earlier dispatch and means "not written": record memory is reused across dispatches
// without clearing (the host zeroes it only when the id space wraps around).
constexpr uint64_t kRaceEpochMax = 4095;
constexpr uint32_t kRaceGroupBits = 24;
// Threadgroup memory: one record per granule (as device memory's: the element size, at most 4
// bytes); runs are process-unique serials (stale records of an earlier threadgroup on the worker
// never match). Byte masks say which bytes of the granule the recorded write / reads covered (0:
// several threads' parts, not compared until the next barrier interval) and which were written in
// the run at all (uninitialised reads).
struct tg_shadow {
  uint32_t wrun;    // threadgroup run of the last write (0: none)
  uint16_t wepoch;  // its barrier interval
  uint16_t wsimd;   // the writer's simdgroup-level syncs at the write
  uint16_t wlane;   // the writer (thread index in threadgroup)
  uint16_t wline;   // source line of the write
  uint32_t rrun;    // threadgroup run of the reads recorded since the last write
  uint16_t repoch;
  uint16_t rsimd;
  uint16_t rlane;   // the reader + 1, and flags (race_access)
  uint16_t rline;
  uint8_t wbytes;   // bytes of the granule the recorded write covers
  uint8_t init;     // bytes of the granule written in run wrun
  uint8_t rbytes;   // bytes of the granule the recorded reads cover
  uint8_t unused;
};

struct thread_attrs;

// The threadgroup running on a worker, for race detection: where its threads are in time.
struct race_state {
  uint32_t group;            // this threadgroup's id, group_lo + linear index (0: device memory not tracked)
  uint32_t group_lo;         // the dispatch's first threadgroup id (see the device record format above)
  uint32_t run;              // process-unique serial of this threadgroup run
  uint32_t epoch;            // threadgroup_barriers passed
  uint32_t simd_epoch[32];   // simdgroup-level syncs (collectives, simdgroup_barrier) passed, per simdgroup
  // The running kernel object's tls.attrs on this thread (set by the kernel when the threadgroup
  // starts): the current thread without a thread-local lookup per access.
  const thread_attrs *const *attrs_slot;
  // A plain loop's running thread as a device race record's writer bits (group | epoch << 24 |
  // thread << 36), set per thread by run_group_plain: a write's record is then this word, the
  // access's line and bytes. 0 (fiber and work-item modes, untracked groups): looked up per access.
  uint64_t who;
};

// What checked mode reports (host_api::race).
enum race_kind : uint32_t {
  race_raw = 1,        // a read of another thread's write in the same barrier interval
  race_waw = 2,        // two threads wrote it in the same barrier interval
  race_war = 3,        // a write over another thread's read in the same barrier interval
  race_uninit = 4,     // a read of threadgroup memory no thread of the threadgroup wrote
  race_cross_waw = 5,  // written by two threadgroups of one dispatch
  race_cross_raw = 6,  // read by one threadgroup, written by another, in one dispatch
};

// Memory the kernel reaches through a checked pointer: a bound buffer, a threadgroup(n) memory
// block, or a threadgroup variable. `shadow` (one byte per buffer byte) is non-null for buffers
// whose writes must cover every byte (the dispatch's must-write buffers); `race` / `tg` hold the
// race-detection records (device / threadgroup memory).
struct check_binding {
  char *base;
  uint64_t length;
  uint32_t index;
  uint32_t elem_size;
  uint8_t *shadow;
  const host_api *host;
  void *dispatch;
  uint64_t *race;
  uint32_t granule_shift;  // race records: log2 of the granule in bytes (0, 1 or 2)
  tg_shadow *tg;
  race_state *rs;     // the worker's race_state (its copies of the bindings; null in launch::checks)
  const char *name;   // a threadgroup variable's name (null for buffers and threadgroup(n) memory)
  uint32_t kind;      // 0 device buffer, 1 threadgroup(n) memory, 2 threadgroup variable
  // A buffer the kernel declares read-only (a pointer to const): the dispatch's word holding its
  // length until the first write through it (const cast away) sets it to 0. Device reads are
  // compared with recorded writes only, so until then a read has nothing to race with and skips
  // the records (and the word is the read's bounds). Null for other buffers.
  uint64_t *unwritten_len;
  // The dispatch's mark in `shadow` (1-255): a shadow byte equal to it was written in this
  // dispatch, any other value by an earlier one (shadow memory is reused without clearing).
  uint32_t shadow_mark;
};

struct launch {
  const host_api *host;
  void *dispatch;                // host-side dispatch record (reports)
  void *buffers[kMaxBindings];
  uint64_t lengths[kMaxBindings];
  const check_binding *checks;   // kMaxBindings entries in checked mode, else null
  uint32_t threads_per_grid[3];
  uint32_t threadgroups_per_grid[3];
  uint32_t threads_per_threadgroup[3];  // as dispatched (edge threadgroups may be smaller)
  const uint8_t *fc_values;      // 16 bytes per module function constant, declaration order
  const uint8_t *fc_defined;     // 1 byte per module function constant
};

struct group {
  race_state *race;                 // checked mode: race detection of this run (else null)
  const check_binding *tg_checks;   // checked mode: the threadgroup(n) blocks (kMaxBindings), else null
  const check_binding *checks;      // checked mode: this worker's copies of launch::checks, else null
  uint32_t id[3];
  uint32_t size[3];   // the threads this threadgroup really has in each dimension
  uint32_t nthreads;
  // The box of threads a plain loop runs: [from, to) in each dimension, normally all of them (the
  // host re-runs single threads to find the one that faulted).
  uint32_t from[3];
  uint32_t to[3];
  void *tg_mem[kMaxBindings];
};

struct thread_attrs {
  uint32_t grid[3];
  uint32_t local[3];
  uint32_t index;     // thread_index_in_threadgroup
  uint32_t lane_id;   // thread_index_in_simdgroup
  uint32_t simd_id;   // simdgroup_index_in_threadgroup
};

struct lane;
// A collective's combining step: reads every member's `in` (and `arg`) and writes every member's
// `out`. `base` is lane 0 of the simdgroup; bit l of `mask` is lane base[l], a member.
typedef void (*combine_fn)(lane *base, uint32_t mask);

// A cooperative lane (fiber mode). The host owns the array; the kernel side fills in/out/arg/
// combine before blocking at a collective. When every live lane of the simdgroup is blocked, the
// host groups the lanes at the same call site (token and combine) into an active set and runs
// `combine` once for the set before any member resumes.
struct lane {
  thread_attrs a;
  const launch *L;
  const group *G;
  const void *in;
  void *out;
  combine_fn combine;  // null for simdgroup_barrier
  uint32_t arg;
  uint32_t active;     // active set of the collective that just completed (bit per lane)
  lane *simd_base;     // lane 0 of this lane's simdgroup
  void *host;
  // This OS thread's mgsim::tls.lane / tls.attrs in the kernel object, recorded when the lane
  // starts: the host points them at each lane it resumes (no TLS lookup in the kernel per switch).
  lane **tls_lane_slot;
  const thread_attrs **tls_attrs_slot;
};

// Work-item mode (mgsim_wi.h): one call runs a whole threadgroup. The kernel's code is split at its
// barriers, collectives and simdgroup-matrix operations; the code between two of them runs as a
// loop over the active lanes, values live across them are kept per lane in `arena` storage, and
// the operations themselves run once per simdgroup (or threadgroup) over all lanes' values.
// Bit l of a mask word s is lane 32 * s + l.
struct wi_ctx {
  uint32_t n;              // threads in the threadgroup
  uint32_t nsg;            // simdgroups
  uint32_t active[32];     // the lanes running the current code
  uint32_t alive[32];      // the lanes that have not returned from the kernel
  uint32_t depth;          // work-item function nesting (0 while none runs)
  uint32_t failed;         // a barrier error stopped the threadgroup: every mask is empty
  uint32_t cur;            // the lane running per-lane code (fault reports)
  uint32_t track;          // publish the running lane's attributes in the kernel's tls.attrs
  char *arena;             // per-lane storage, used as a stack
  uint64_t arena_cap;
  uint64_t arena_top;
  uint64_t lane_bytes;     // one lane's share of the live storage
  uint64_t lane_limit;     // its limit (a fiber lane's stack size, MG_SIM_STACK_KB)
  const launch *L;
  const group *G;
  const thread_attrs *attrs;          // n entries
  const thread_attrs **tls_attrs;     // the kernel object's tls.attrs on this thread (track)
  void *loop;                          // innermost work-item loop (kernel side)
  void *fn;                            // innermost work-item function (kernel side)
};

struct host_api {
  uint32_t version;
  void (*block)(lane *self, uint32_t kind, uint64_t token);
  // Work-item mode: a threadgroup_barrier reached by `reached` of the group's threads while
  // `exited` had returned from the kernel (the others are in divergent control flow); the host
  // records the error and the kernel side then stops the group.
  void (*wi_barrier_error)(wi_ctx *c, uint32_t reached, uint32_t exited);
  // Work-item mode: per-lane storage ran out (`need` more bytes), or one lane's share exceeds
  // lane_limit; the host fails the dispatch.
  void (*wi_exhausted)(wi_ctx *c, uint64_t need);
  // Checked mode: a race or an uninitialised read (race_kind) at `byte_offset` of `b`, `size`
  // bytes, by the current thread (position `pos`) at `line`; the other access was by thread
  // `other_lane` of threadgroup `other_group` (linear index + 1) at `other_line`.
  void (*race)(const check_binding *b, int64_t byte_offset, uint32_t size, uint32_t kind, uint32_t other_lane,
               uint32_t other_group, uint32_t other_line, uint32_t line, const uint32_t *pos);
  // Checked mode: a threadgroup variable's binding (base, length, name set) met on this thread for
  // the first time; the host gives it its race records.
  void (*tg_register)(check_binding *b);
  void (*misuse)(const launch *L, const char *what);
  void (*violation)(const check_binding *b, int64_t byte_offset, uint32_t size, int write,
                    const uint32_t *pos);
};

struct kernel_desc {
  const char *name;
  void (*plain)(const launch *L, const group *G);
  void (*lane_main)(lane *self);
  void (*wi)(const launch *L, const group *G, wi_ctx *c);
  // Why a kernel with barriers, collectives or simdgroup matrices runs as fibers rather than in
  // work-item mode (null when it does not; null with needs_fibers and no `wi`: a work-item
  // kernel's tier-0 stand-in, which runs as fibers until it is compiled optimised).
  const char *fiber_reason;
  uint32_t needs_fibers;
  uint32_t max_threads;
  uint32_t static_tg_bytes;
  uint32_t buffer_mask;      // buffer(n) parameters
  uint32_t tg_mask;          // threadgroup(n) parameters
  uint32_t elem_size[kMaxBindings];  // pointee size of buffer(n), for reports
  uint32_t ref_size[kMaxBindings];   // size of T for `constant T&` buffer parameters, else 0
  uint32_t tg_elem_size[kMaxBindings];  // pointee size of threadgroup(n) parameters
  uint32_t const_mask;       // buffer(n) parameters that point to const
};

struct fconst_desc {
  const char *name;
  int32_t index;
  uint32_t mtl_type;   // MTLDataType raw value, 0 when unknown
  uint32_t size;
};

struct module_desc {
  uint32_t version;
  uint32_t n_kernels;
  const kernel_desc *kernels;
  uint32_t n_fconsts;
  const fconst_desc *fconsts;
};

}  // namespace abi
}  // namespace mgsim

#ifndef MGSIM_ABI_ONLY

#include <string.h>
#include <tuple>
#include <type_traits>
#include <utility>

#define MGSIM_ALWAYS_INLINE inline __attribute__((always_inline))
#define MGSIM_NOINLINE __attribute__((noinline))
#define MGSIM_EXPORT __attribute__((visibility("default")))

namespace mgsim {

// Which lane runs on this OS thread right now. Fibers of one threadgroup never migrate between
// OS threads, so thread_local is per-threadgroup state here.
// One thread_local object (each access to thread-local storage in a dlopen'ed object is a
// __tls_get_addr call; one object means one call per function that uses it).
struct tls_state {
  abi::lane *lane;                  // the running lane (fiber mode), else null
  const abi::thread_attrs *attrs;   // its thread attributes (fiber mode, or tracked plain loops)
  const abi::launch *launch;        // the dispatch being run
  const abi::group *group;          // the threadgroup being run
};
inline thread_local tls_state tls = {nullptr, nullptr, nullptr, nullptr};

// Per-call-site token the translator passes to every collective and barrier it sees.
struct site {
  uint32_t id;
};

// A tracked plain loop (run_group_plain) keeps only `index` of the record it publishes current:
// lane_id == kLazyAttrs marks it, and full_attrs() derives the rest (lane_id and simd_id are
// index & 31 and index >> 5 in every execution mode).
constexpr uint32_t kLazyAttrs = 0xffffffffu;

// The running thread's complete attributes (a derived copy for a lazy record).
inline const abi::thread_attrs *full_attrs(const abi::thread_attrs *a) {
  if (!a || a->lane_id != kLazyAttrs) return a;
  static thread_local abi::thread_attrs full;
  const abi::group *G = tls.group;
  const abi::launch *L = tls.launch;
  const uint32_t i = a->index, sx = G->size[0], sy = G->size[1];
  full.local[0] = i % sx;
  full.local[1] = (i / sx) % sy;
  full.local[2] = i / (sx * sy);
  for (int k = 0; k < 3; ++k) full.grid[k] = G->id[k] * L->threads_per_threadgroup[k] + full.local[k];
  full.index = i;
  full.lane_id = i & 31u;
  full.simd_id = i >> 5;
  return &full;
}

// The lane index used by simdgroup_matrix::thread_elements() (declared by mgsim_simdgroup_matrix.h).
inline unsigned simd_lane_id() {
  if (tls.lane) return tls.lane->a.lane_id;
  return tls.attrs ? tls.attrs->index & 31u : 0u;
}

MGSIM_NOINLINE inline uint64_t call_site_token() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

inline void misuse(const char *what) {
  const abi::launch *L = tls.launch;
  if (L && L->host) L->host->misuse(L, what);
}

// Other lanes may run before this returns; the host restores tls.lane/tls.attrs for this lane.
MGSIM_ALWAYS_INLINE void block(abi::lane *me, uint32_t kind, uint64_t token) {
  me->L->host->block(me, kind, token);
}

// Checked mode: where race detection finds the running thread (see race_state::attrs_slot).
MGSIM_ALWAYS_INLINE void publish_attrs(const abi::group *G) {
  if (G->race) G->race->attrs_slot = &tls.attrs;
}

inline void enter_lane(abi::lane *me) {
  tls.lane = me;
  tls.attrs = &me->a;
  tls.launch = me->L;
  tls.group = me->G;
  me->tls_lane_slot = &tls.lane;
  me->tls_attrs_slot = &tls.attrs;
  publish_attrs(me->G);
}

// --- thread attributes -------------------------------------------------------------------------

template <class Q, class = void>
struct has_z : std::false_type {};
template <class Q>
struct has_z<Q, decltype((void)std::declval<Q &>().z)> : std::true_type {};
template <class Q, class = void>
struct has_y : std::false_type {};
template <class Q>
struct has_y<Q, decltype((void)std::declval<Q &>().y)> : std::true_type {};

// Converts an attribute value to the parameter's declared type: uint, ushort, uint2/3, ushort2/3.
template <class P>
MGSIM_ALWAYS_INLINE std::remove_cv_t<std::remove_reference_t<P>> attr(uint32_t x, uint32_t y,
                                                                      uint32_t z) {
  using Q = std::remove_cv_t<std::remove_reference_t<P>>;
  if constexpr (std::is_arithmetic<Q>::value) {
    (void)y;
    (void)z;
    return static_cast<Q>(x);
  } else if constexpr (has_z<Q>::value) {
    using E = std::remove_cv_t<std::remove_reference_t<decltype(std::declval<Q &>().x)>>;
    return Q(static_cast<E>(x), static_cast<E>(y), static_cast<E>(z));
  } else if constexpr (has_y<Q>::value) {
    (void)z;
    using E = std::remove_cv_t<std::remove_reference_t<decltype(std::declval<Q &>().x)>>;
    return Q(static_cast<E>(x), static_cast<E>(y));
  } else {
    static_assert(std::is_arithmetic<Q>::value,
                  "[mgsim] a thread attribute parameter must be uint, ushort or a 2/3-vector of them");
    return Q();
  }
}

// --- checked device pointers -------------------------------------------------------------------

template <class T>
struct dptr;

// Scratch for out-of-bounds accesses: reads see zeros, writes land here and are dropped.
alignas(64) inline thread_local unsigned char oob_scratch[4096];

inline const uint32_t *current_position() {
  static const uint32_t none[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
  return tls.attrs ? full_attrs(tls.attrs)->grid : none;
}

// Whether device race record `e` was written in the running dispatch (its threadgroup id is not
// below the dispatch's first; a never-written record, 0, is).
MGSIM_ALWAYS_INLINE bool record_current(uint64_t e, const abi::race_state &r) {
  return (uint32_t(e) & 0xffffffu) >= r.group_lo;
}

// A device race record's bytes field for a whole granule of 1 << gs bytes.
MGSIM_ALWAYS_INLINE uint64_t gmask_bytes(uint32_t gs) { return (2u << ((1u << gs) - 1u)) - 1u; }

// Race detection for one access (checked mode): compares with the last accesses recorded for
// its bytes and records it. `value` is what a write stores (a write of the value already there is
// not a conflict), or null.
// A simdgroup-wide access (`sg`: a simdgroup-matrix load or store, which every lane of the
// simdgroup makes together) never conflicts with the same access by its simdgroup's other lanes.
MGSIM_NOINLINE inline void race_access(const abi::check_binding *b, int64_t off, uint32_t n, bool write,
                                       uint32_t line, const void *value, bool sg = false) {
  const abi::thread_attrs *a = tls.attrs;
  const abi::group *G = tls.group;
  if (!a || !G || !G->race) return;
  const abi::race_state &r = *G->race;
  const uint32_t L = a->index, S = a->index >> 5;
  const char *mem = b->base + off;
  auto same_value = [&]() { return value && memcmp(mem, value, n) == 0; };
  if (b->race) {
    if (!r.group) return;
    const uint32_t gs = b->granule_shift, gmask = (1u << gs) - 1u;
    const uint64_t E = r.epoch < abi::kRaceEpochMax ? r.epoch : abi::kRaceEpochMax;
    const uint64_t who = uint64_t(r.group) | (E << 24) | (uint64_t(L & 1023u) << 36) |
                         (uint64_t(line < 16384u ? line : 0u) << 46);
    constexpr uint64_t kWho = ~(uint64_t(15) << 60);
    const uint64_t first = uint64_t(off) >> gs, last = (uint64_t(off) + n - 1) >> gs;
    bool reported = false;
    for (uint64_t q = first; q <= last; ++q) {
      // The bytes of granule q this access covers.
      const uint64_t lo = q << gs, hi = lo + gmask;
      const uint32_t from = uint64_t(off) > lo ? uint32_t(uint64_t(off) - lo) : 0u;
      const uint32_t to = uint64_t(off) + n - 1 < hi ? uint32_t(uint64_t(off) + n - 1 - lo) : gmask;
      const uint64_t bytes = ((2ull << to) - 1) & ~((1ull << from) - 1);
      uint64_t &slot = b->race[q];
      const uint64_t e = record_current(slot, r) ? slot : 0;  // an earlier dispatch's: not written
      const uint64_t ebytes = e >> 60;
      if (e && ebytes && (ebytes & bytes) && (e & kWho) != who && !reported) {
        const uint32_t g = uint32_t(e & 0xffffffu), eE = uint32_t((e >> 24) & 4095u), eL = uint32_t((e >> 36) & 1023u);
        uint32_t kind = 0;
        if (g != r.group) {
          kind = write ? abi::race_cross_waw : abi::race_cross_raw;
        } else if (eE == E && E != abi::kRaceEpochMax && eL != L && !(sg && (eL >> 5) == S)) {
          // Lanes of one simdgroup run in lockstep: a read after a write there is ordered.
          if (write) kind = abi::race_waw;
          else if ((eL >> 5) != S) kind = abi::race_raw;
        }
        if (kind && (kind == abi::race_waw || kind == abi::race_cross_waw) && same_value()) kind = 0;
        if (kind) {
          b->host->race(b, int64_t(lo + from), n, kind, eL, g, uint32_t((e >> 46) & 16383u), line, full_attrs(a)->grid);
          reported = true;
        }
      }
      if (write) {
        // A record of a whole-granule write is the must-write check's proof that its bytes were
        // written (check_elem marks no shadow): say so in the shadow before the record changes.
        if (b->shadow && ebytes == gmask_bytes(gs)) {
          for (uint64_t i = lo; i <= hi && i < b->length; ++i)
            __atomic_store_n(b->shadow + i, uint8_t(b->shadow_mark), __ATOMIC_RELAXED);
        }
        // Other bytes of the granule written by another thread: the record can no longer say who
        // wrote which (bytes 0: not compared again until a whole-granule write).
        const bool mine = (e & kWho) == who;
        const bool others = e && ebytes && (ebytes & ~bytes) && !mine;
        const uint64_t keep = e && mine ? ebytes : 0;
        slot = who | (others ? 0ull : ((bytes | keep) << 60));
      }
    }
    return;
  }
  const uint16_t E = uint16_t(r.epoch < 0xfffeu ? r.epoch : 0xfffeu);
  const uint16_t SE = uint16_t(r.simd_epoch[S & 31u]);
  const uint32_t run = r.run;
  // rlane: first reader + 1 in bits 0-10; bit 15: more readers, all in its simdgroup (rsimd is
  // their latest simdgroup-sync count); bit 14: readers in several simdgroups.
  constexpr uint16_t kSameSg = 0x8000u, kMixed = 0x4000u;
  const uint32_t gs = b->granule_shift, gmask = (1u << gs) - 1u;
  const uint64_t first = uint64_t(off) >> gs, last = (uint64_t(off) + n - 1) >> gs;
  bool reported = false;
  for (uint64_t q = first; q <= last; ++q) {
    abi::tg_shadow &e = b->tg[q];
    const uint64_t lo = q << gs, hi = lo + gmask;
    const uint32_t from = uint64_t(off) > lo ? uint32_t(uint64_t(off) - lo) : 0u;
    const uint32_t to = uint64_t(off) + n - 1 < hi ? uint32_t(uint64_t(off) + n - 1 - lo) : gmask;
    const uint8_t bytes = uint8_t(((2u << to) - 1u) & ~((1u << from) - 1u));
    uint32_t kind = 0, other = 0, other_line = 0;
    const bool wnow = e.wrun == run && e.wepoch == E && E != 0xfffeu && (e.wbytes & bytes);
    // The same simdgroup-wide access by another lane of this simdgroup is no conflict; neither is
    // one ordered by a simdgroup-level sync since (lanes of a simdgroup run in lockstep).
    const bool ordered = ((e.wlane >> 5) == S) && (e.wsimd != SE || sg);
    const bool rnow = e.rrun == run && e.repoch == E && (e.rlane & 0x7ffu) != 0;
    if (write) {
      const uint32_t reader = (e.rlane & 0x7ffu) - 1u;
      if (wnow && e.wlane != L && !ordered && !same_value()) {
        kind = abi::race_waw;
        other = e.wlane;
        other_line = e.wline;
      } else if (rnow && (e.rbytes & bytes) &&
                 ((e.rlane & kMixed) || ((e.rlane & kSameSg) || reader != L) &&
                                            !((reader >> 5) == S && e.rsimd != SE) && !(sg && (reader >> 5) == S))) {
        kind = abi::race_war;
        other = reader;
        other_line = e.rline;
      }
      if (e.wrun == run) {
        // Bytes of the granule another thread wrote in this interval stay: the record no longer
        // says who wrote which.
        const bool theirs = e.wepoch == E && e.wlane != L && (e.wbytes & ~bytes);
        e.wbytes = theirs ? uint8_t(0) : uint8_t(e.wepoch == E && e.wlane == L ? e.wbytes | bytes : bytes);
        e.init = uint8_t(e.init | bytes);
      } else {
        e.wbytes = bytes;
        e.init = bytes;
      }
      e.wrun = run;
      e.wepoch = E;
      e.wsimd = SE;
      e.wlane = uint16_t(L);
      e.wline = uint16_t(line);
      e.rrun = 0;
    } else {
      if (e.wrun != run || (e.init & bytes) != bytes) {
        kind = abi::race_uninit;
      } else if (wnow && e.wlane != L && !ordered) {
        kind = abi::race_raw;
        other = e.wlane;
        other_line = e.wline;
      }
      if (rnow) {
        const uint32_t reader = (e.rlane & 0x7ffu) - 1u;
        if (reader != L || (e.rlane & (kSameSg | kMixed))) {
          // Another thread's reads of other bytes: which thread read which is no longer known.
          if (e.rbytes != bytes) e.rbytes = 0;
          if ((reader >> 5) == S) e.rlane |= kSameSg;
          else e.rlane |= kMixed;
        } else {
          e.rbytes = uint8_t(e.rbytes | bytes);
        }
        if (SE > e.rsimd) e.rsimd = SE;
      } else {
        e.rrun = run;
        e.repoch = E;
        e.rsimd = SE;
        e.rlane = uint16_t(L + 1);
        e.rline = uint16_t(line);
        e.rbytes = bytes;
      }
    }
    if (kind && !reported) {
      b->host->race(b, int64_t(lo + from), n, kind, other, r.group, other_line, line, full_attrs(a)->grid);
      reported = true;
    }
  }
}

// Checked mode, threadgroup memory: the common cases of an access of one whole granule, inline
// (the thread-local lookup is then shared by a function's accesses): a read of what an earlier
// barrier interval or this thread wrote, by its only reader so far in this interval; a write that
// no other thread read or wrote in this interval. False: race_access decides.
MGSIM_ALWAYS_INLINE bool tg_race_fast(const abi::check_binding *b, int64_t off, bool write, uint32_t line) {
  const abi::race_state *rs = b->rs;
  if (!rs || !rs->attrs_slot) return false;
  const abi::thread_attrs *a = *rs->attrs_slot;
  if (!a) return false;
  const abi::race_state &r = *rs;
  if (r.epoch >= 0xfffeu) return false;
  const uint16_t E = uint16_t(r.epoch), L = uint16_t(a->index);
  const uint32_t gs = b->granule_shift;
  const uint8_t full = uint8_t((2u << ((1u << gs) - 1u)) - 1u);
  abi::tg_shadow &e = b->tg[uint64_t(off) >> gs];
  const bool rnow = e.rrun == r.run && e.repoch == E;
  if (!write) {
    if (e.wrun != r.run || e.init != full || (e.wepoch == E && e.wlane != L)) return false;
    if (!rnow) {
      e.rrun = r.run;
      e.repoch = E;
      e.rsimd = uint16_t(r.simd_epoch[(a->index >> 5) & 31u]);
      e.rlane = uint16_t(L + 1);
      e.rline = uint16_t(line);
      e.rbytes = full;
      return true;
    }
    if (e.rlane != L + 1 || e.rbytes != full) return false;
    const uint16_t SE = uint16_t(r.simd_epoch[(a->index >> 5) & 31u]);
    if (SE > e.rsimd) e.rsimd = SE;
    return true;
  }
  if (e.wrun == r.run && e.wepoch == E && e.wlane != L) return false;
  if (rnow && e.rlane != L + 1) return false;
  e.wrun = r.run;
  e.wepoch = E;
  e.wsimd = uint16_t(r.simd_epoch[(a->index >> 5) & 31u]);
  e.wlane = L;
  e.wline = uint16_t(line);
  e.wbytes = full;
  e.init = full;
  e.rrun = 0;
  return true;
}

// Checked accesses inline (-O1 and up), or call one out-of-line copy at tier 0 (-O0): there the
// inlined body is never simplified, and a kernel whose every access carried it (a scatter's index
// loads) grew to ~170 KB of code, e.g. 16 s of g++ CPU for one checked scatter family.
#ifdef __OPTIMIZE__
#define MGSIM_CHECK_INLINE MGSIM_ALWAYS_INLINE
#else
#define MGSIM_CHECK_INLINE MGSIM_NOINLINE inline
#endif

// The running thread as a device race record's writer bits (group | interval << 24 | thread <<
// 36), or 0 when unknown (device memory not tracked, or no thread published).
MGSIM_ALWAYS_INLINE uint64_t current_writer(const abi::race_state *r) {
  if (const uint64_t who = r->who) return who;
  const abi::thread_attrs *a = r->attrs_slot ? *r->attrs_slot : nullptr;
  if (!a || !r->group) return 0;
  const uint64_t E = r->epoch < abi::kRaceEpochMax ? r->epoch : abi::kRaceEpochMax;
  return uint64_t(r->group) | (E << 24) | (uint64_t(a->index & 1023u) << 36);
}

// Whether a whole-granule access by `who` can skip race_access (it would report nothing): the
// granule was never written in this dispatch, or its writers are no longer compared (bytes 0),
// or it was last written by this threadgroup in another barrier interval or by this very thread.
MGSIM_ALWAYS_INLINE bool race_quiet(uint64_t e, uint64_t who, const abi::race_state *r) {
  const uint64_t x = e ^ who;
  return !record_current(e, *r) || (e >> 60) == 0 ||
         (!(x & 0xffffffu) && ((x & (uint64_t(4095) << 24)) || ((who >> 24) & 4095u) == abi::kRaceEpochMax ||
                               !(x & (uint64_t(1023) << 36))));
}

// True when [p, p + bytes) lies inside the binding; reports otherwise. Marks writes, and checks
// races unless the access is atomic (`atomic`).
MGSIM_CHECK_INLINE bool check_access(const abi::check_binding *b, const void *p, size_t bytes, bool write,
                                      uint32_t line = 0, const void *value = nullptr, bool atomic = false,
                                      bool sg = false) {
  if (!b) return true;
  const char *c = static_cast<const char *>(p);
  int64_t off = c - b->base;
  if (bytes > b->length || uint64_t(off) > b->length - bytes) {
    b->host->violation(b, off, uint32_t(bytes), write ? 1 : 0, current_position());
    return false;
  }
  if (write && b->shadow) {
    uint8_t *s = b->shadow + off;
    const uint8_t m = uint8_t(b->shadow_mark);
    if (bytes == 4 && !(off & 3)) __atomic_store_n(reinterpret_cast<uint32_t *>(s), m * 0x01010101u, __ATOMIC_RELAXED);
    else if (bytes == 8 && !(off & 7)) __atomic_store_n(reinterpret_cast<uint64_t *>(s), m * 0x0101010101010101ull, __ATOMIC_RELAXED);
    else for (size_t i = 0; i < bytes; ++i) __atomic_store_n(s + i, m, __ATOMIC_RELAXED);
  }
  if (!atomic) {
    if (b->race) {
      if (uint64_t *u = b->unwritten_len) {
        if (__atomic_load_n(u, __ATOMIC_RELAXED)) {
          if (!write) return true;  // a read-only buffer not written through: nothing to race with
          __atomic_store_n(u, uint64_t(0), __ATOMIC_RELAXED);
        }
      }
      const uint32_t gs = b->granule_shift;
      if (bytes == (1u << gs) && !(uint64_t(off) & ((1u << gs) - 1u))) {
        uint64_t &slot = b->race[uint64_t(off) >> gs];
        const uint64_t e = slot;
        // A read records nothing; a write that conflicts with nothing records itself.
        if (!write && b->rs && (!record_current(e, *b->rs) || (e >> 60) == 0)) return true;
        if (const uint64_t who = b->rs ? current_writer(b->rs) : 0) {
          if (race_quiet(e, who, b->rs)) {
            if (write) slot = who | (uint64_t(line < 16384u ? line : 0u) << 46) | (gmask_bytes(gs) << 60);
            return true;
          }
        }
      }
      race_access(b, off, uint32_t(bytes), write, line, value, sg);
    } else if (b->tg) {
      const uint32_t gs = b->granule_shift;
      if (!sg && bytes == (1u << gs) && !(uint64_t(off) & ((1u << gs) - 1u)) && tg_race_fast(b, off, write, line))
        return true;
      race_access(b, off, uint32_t(bytes), write, line, value, sg);
    }
  }
  return true;
}

// Optimised checked work-item units (a tier-up at -O1) call one out-of-line copy too: the inline
// copy at every access tripled their compile (checked sort, 4 kernels: 3.0 -> 1.0 CPU s). The
// translator specialises check_outline_of<program> in them; plain checked units (elementwise
// kernels, -O2) keep the inline check. Read through T so that it is looked up where instantiated.
template <class Tag>
struct check_outline_of {
  static constexpr bool value = false;
};
MGSIM_NOINLINE inline bool check_access_outline(const abi::check_binding *b, const void *p, size_t bytes, bool write,
                                                uint32_t line, const void *value, bool atomic, bool sg) {
  return check_access(b, p, bytes, write, line, value, atomic, sg);
}
template <class T>
MGSIM_ALWAYS_INLINE bool check_access_of(const abi::check_binding *b, const void *p, size_t bytes, bool write,
                                         uint32_t line = 0, const void *value = nullptr, bool atomic = false,
                                         bool sg = false) {
#ifdef __OPTIMIZE__
  if constexpr (check_outline_of<std::conditional_t<sizeof(T) != 0, program, void>>::value)
    return check_access_outline(b, p, bytes, write, line, value, atomic, sg);
  else
#endif
    return check_access(b, p, bytes, write, line, value, atomic, sg);
}

// check_elem's way out: one out-of-line copy, so an optimised kernel's accesses each carry only
// the fast path inline.
MGSIM_NOINLINE inline bool check_access_slow(const abi::check_binding *b, const void *p, size_t bytes, bool write,
                                             uint32_t line, const void *value) {
  return check_access(b, p, bytes, write, line, value);
}

// ck_fast::ulen of bindings without a read-only buffer's word (check_binding::unwritten_len):
// always 0 ("written"), so an access loads one word, never tests a pointer.
inline uint64_t ck_ulen_written = 0;

// What check_elem's fast paths need of a binding, for elements of `elem` bytes: in optimised code
// a checked pointer carries it (a fat pointer, ck), held by value so the compiler keeps it in
// registers or stack slots across a kernel's accesses where fields read through the binding were
// reloaded after every record store (a uint64_t or byte store may alias them). A binding's fields
// do not change while a kernel runs (a threadgroup variable's are set before its first pointer).
struct ck_fast {
  const abi::check_binding *b = nullptr;  // null: an unchecked pointer
  char *base = nullptr;
  uint64_t *race = nullptr;   // device race records (null: threadgroup memory, or not tracked)
  uint64_t *ulen = &ck_ulen_written;  // check_binding::unwritten_len, else &ck_ulen_written
  abi::race_state *rs = nullptr;
  // Whole elements in the binding: check_elem's element index (the offset rotated right by log2
  // of the element size, huge when misaligned) is in bounds and aligned when below it.
  uint64_t limq = 0;
  // limq where the device read / write fast path applies, else 0 (one compare for both): race
  // records whose granule is the element and a race state (limr); for writes also no read-only
  // buffer's word to clear (limw).
  uint64_t limr = 0;
  uint64_t limw = 0;
  ck_fast() = default;
  MGSIM_ALWAYS_INLINE ck_fast(const abi::check_binding *bb, size_t elem) : ck_fast(bb, elem, bb ? bb->base : nullptr) {}
  // `at`: the binding's base as the caller already has it (bind_buffer: the pointer itself), so
  // the compiler sees one value for the pointer and the base, also when bb is null.
  MGSIM_ALWAYS_INLINE ck_fast(const abi::check_binding *bb, size_t elem, char *at) : b(bb), base(at) {
    if (bb) {
      race = bb->race;
      ulen = bb->unwritten_len ? bb->unwritten_len : &ck_ulen_written;
      rs = bb->rs;
      for_elem(elem);
    }
  }
  MGSIM_ALWAYS_INLINE void for_elem(size_t elem) {
    limq = elem ? b->length / elem : 0;
    const bool fast = race && rs && elem == (size_t(1) << b->granule_shift);
    // An element of several 4-byte granules (a float4 or packed_float4 of a float buffer): limr /
    // limw count the granules where such an element may start (check_elem's multi-granule path).
    const uint64_t g4 = b->length >> 2, k = elem >> 2;
    const bool multi = race && rs && b->granule_shift == 2 && (elem == 8 || elem == 12 || elem == 16);
    const uint64_t lim = fast ? limq : multi && g4 >= k ? g4 - k + 1 : 0;
    limr = lim;
    limw = ulen == &ck_ulen_written ? lim : 0;
  }
};

#ifdef __OPTIMIZE__
struct ck : ck_fast {
  ck() = default;
  MGSIM_ALWAYS_INLINE ck(const abi::check_binding *bb, size_t elem) : ck_fast(bb, elem) {}
  MGSIM_ALWAYS_INLINE ck(const abi::check_binding *bb, size_t elem, char *at) : ck_fast(bb, elem, at) {}
  // The same binding seen through a pointer to elements of `elem` bytes.
  MGSIM_ALWAYS_INLINE ck as(size_t elem) const {
    ck c = *this;
    if (c.b) c.for_elem(elem);
    return c;
  }
};
#else
// Tier 0 (-O0): the binding only. Every copy of a checked pointer is code at -O0, and a fat one
// made tier-0 units compile ~1.6x slower; check_elem (out of line here) reads the binding.
struct ck {
  const abi::check_binding *b = nullptr;
  ck() = default;
  MGSIM_ALWAYS_INLINE ck(const abi::check_binding *bb, size_t) : b(bb) {}
  MGSIM_ALWAYS_INLINE ck(const abi::check_binding *bb, size_t, char *) : b(bb) {}
  MGSIM_ALWAYS_INLINE ck as(size_t) const { return *this; }
};
#endif

// The bytes a pointer to T steps over (1 for void), for ck's per-element fields.
template <class T>
constexpr size_t ck_elem() {
  if constexpr (std::is_void<T>::value) return 1;
  else return sizeof(T);
}

// One element's access through a checked pointer (T: the pointee), as check_access decides it.
// The common cases take the fewest tests here: a read of a read-only buffer not written through
// (one compare against its word, which is its length: bounds too), and in-bounds aligned whole
// granules of device memory (limr / limw) or threadgroup memory that conflict with nothing.
// Everything else, and anything to report, goes to check_access, which repeats the idempotent
// steps (clearing the read-only buffer's word). Out of line at tier 0, as check_access.
template <class T>
MGSIM_ALWAYS_INLINE bool check_elem_fast(const ck &kk, const T *q, bool write, uint32_t line, const void *value);

// Optimised checked work-item units (check_outline_of, above) call one out-of-line copy per
// element type: the fast paths without a copy at every access.
template <class T>
MGSIM_NOINLINE bool check_elem_outline(const ck &kk, const T *q, bool write, uint32_t line, const void *value) {
  return check_elem_fast(kk, q, write, line, value);
}

template <class T>
MGSIM_CHECK_INLINE bool check_elem(const ck &kk, const T *q, bool write, uint32_t line, const void *value = nullptr) {
#ifdef __OPTIMIZE__
  if constexpr (check_outline_of<std::conditional_t<sizeof(T) != 0, program, void>>::value)
    return check_elem_outline(kk, q, write, line, value);
  else
    return check_elem_fast(kk, q, write, line, value);
#else
  constexpr uint32_t n = uint32_t(sizeof(T));
  // Tier 0: the read-only buffer's shortcut only (its reads are most accesses), the rest in
  // check_access; less code to compile at -O0 (a copy of the fast paths made plain units ~20%
  // slower to compile there).
  const abi::check_binding *b = kk.b;
  if (!write && b && b->unwritten_len) {
    constexpr uint32_t sh = n == 4 ? 2u : n == 2 ? 1u : 0u;
    const uint64_t off = uint64_t(reinterpret_cast<const char *>(q) - b->base);
    const uint64_t qi = sh ? (off >> sh) | (off << ((64u - sh) & 63u)) : off;
    if ((n == 1 || n == 2 || n == 4) && qi < (__atomic_load_n(b->unwritten_len, __ATOMIC_RELAXED) >> sh)) return true;
  }
  return check_access(b, q, n, write, line, value);
#endif
}

// check_elem's slow paths with a written value: the value by copy, so the address of the value
// a kernel stores is taken on the slow path only (passed by address, the value was spilled to
// the stack before every checked store).
template <class V>
MGSIM_NOINLINE bool check_access_slow_v(const abi::check_binding *b, const void *p, bool write, uint32_t line, V v) {
  return check_access(b, p, sizeof(V), write, line, &v);
}
template <class V>
MGSIM_NOINLINE void race_access_v(const abi::check_binding *b, int64_t off, bool write, uint32_t line, V v) {
  race_access(b, off, uint32_t(sizeof(V)), write, line, &v);
}

// check_elem's fast paths (optimised code).
template <class T>
MGSIM_ALWAYS_INLINE bool check_elem_fast(const ck &kk, const T *q, bool write, uint32_t line, const void *value) {
#ifdef __OPTIMIZE__
  constexpr uint32_t n = uint32_t(sizeof(T));
  if constexpr (n == 1 || n == 2 || n == 4) {
    const ck_fast &k = kk;
    constexpr uint32_t sh = n == 4 ? 2u : n == 2 ? 1u : 0u;  // = the granule's log2 on the fast paths
    const uint64_t off = uint64_t(reinterpret_cast<const char *>(q) - k.base);
    const uint64_t qi = sh ? (off >> sh) | (off << ((64u - sh) & 63u)) : off;
    if (!write) {
      // A read-only buffer not written through: nothing to race with (see check_access).
      if (__builtin_expect(qi < (__atomic_load_n(k.ulen, __ATOMIC_RELAXED) >> sh), 1)) return true;
      if (qi < k.limr) {
        const uint64_t e = k.race[qi];
        if (!record_current(e, *k.rs) || (e >> 60) == 0) return true;
        const uint64_t who = current_writer(k.rs);
        if (who && race_quiet(e, who, k.rs)) return true;
      } else if (qi < k.limq && !k.race && k.b->tg) {
        if (n == (1u << k.b->granule_shift) && tg_race_fast(k.b, int64_t(off), false, line)) return true;
        race_access(k.b, int64_t(off), n, false, line, value);
        return true;
      }
    } else if (__builtin_expect(qi < k.limw, 1)) {
      // The record of a whole-granule write is also the must-write check's mark (no shadow).
      uint64_t &slot = k.race[qi];
      const uint64_t e = slot;
      const uint64_t who = current_writer(k.rs);
      if (__builtin_expect(who && race_quiet(e, who, k.rs), 1)) {
        slot = who | (uint64_t(line < 16384u ? line : 0u) << 46) | (gmask_bytes(sh) << 60);
        return true;
      }
    } else if (qi < k.limq && !k.race && k.b->tg) {
      if (n == (1u << k.b->granule_shift) && tg_race_fast(k.b, int64_t(off), true, line)) return true;
      if (value) race_access_v(k.b, int64_t(off), true, line, *static_cast<const std::remove_cv_t<T> *>(value));
      else race_access(k.b, int64_t(off), n, true, line, nullptr);
      return true;
    }
  } else if constexpr (n == 8 || n == 12 || n == 16) {
    // A vector of 2-4 whole 4-byte granules (float4, packed_float4): one check for its granules,
    // each taking the single-granule tests above; anything else goes to check_access.
    const ck_fast &k = kk;
    constexpr uint32_t g = n / 4;
    const uint64_t off = uint64_t(reinterpret_cast<const char *>(q) - k.base);
    const uint64_t qi = (off >> 2) | (off << 62);  // the first granule; huge when misaligned
    if (!write) {
      if (__builtin_expect(qi + (g - 1) < (__atomic_load_n(k.ulen, __ATOMIC_RELAXED) >> 2), 1)) return true;
      if (qi < k.limr) {
        // Usually one writer's one access wrote all the granules: one record to judge.
        const uint64_t *r = k.race + qi;
        uint64_t differ = 0;
        for (uint32_t j = 1; j < g; ++j) differ |= r[j] ^ r[0];
        const uint64_t who = current_writer(k.rs);
        auto quiet = [&](uint64_t e) {
          return !record_current(e, *k.rs) || (e >> 60) == 0 || (who && race_quiet(e, who, k.rs));
        };
        bool all = quiet(r[0]);
        for (uint32_t j = 1; j < g && all && differ; ++j) all = quiet(r[j]);
        if (all) return true;
      }
    } else if (__builtin_expect(qi < k.limw, 1)) {
      const uint64_t *r = k.race + qi;
      uint64_t differ = 0;
      for (uint32_t j = 1; j < g; ++j) differ |= r[j] ^ r[0];
      const uint64_t who = current_writer(k.rs);
      bool quiet = who && race_quiet(r[0], who, k.rs);
      for (uint32_t j = 1; j < g && quiet && differ; ++j) quiet = race_quiet(r[j], who, k.rs);
      if (__builtin_expect(quiet, 1)) {
        const uint64_t rec = who | (uint64_t(line < 16384u ? line : 0u) << 46) | (gmask_bytes(2) << 60);
        for (uint32_t j = 0; j < g; ++j) k.race[qi + j] = rec;
        return true;
      }
    }
  }
  if constexpr (std::is_trivially_copyable<T>::value) {
    if (value) return check_access_slow_v(kk.b, q, write, line, *static_cast<const std::remove_cv_t<T> *>(value));
  }
  return check_access_slow(kk.b, q, n, write, line, value);
#else
  return check_access(kk.b, q, sizeof(T), write, line, value);
#endif
}

template <class T>
MGSIM_ALWAYS_INLINE T *oob_slot() {
  static_assert(sizeof(T) <= sizeof(oob_scratch), "[mgsim] element too large for checked mode");
  memset(oob_scratch, 0, sizeof(T));
  return reinterpret_cast<T *>(oob_scratch);
}

// The element a non-const checked pointer designates: reads and writes are checked separately.
template <class T>
struct elem_ref {
  // The value-proxy protocol of mgsim_types.h: operators and metal:: functions take an elem_ref as
  // a value of T, so exp(p[i]), half ph[i] + ph[j] and vector pv[i] * 2 compile in checked mode.
  using mgsim_value_type = T;
  T *p;
  ck c;
  uint32_t line = 0;  // the access's source line (race reports), set by the translator's wrappers

  MGSIM_ALWAYS_INLINE operator T() const {
    if (check_elem(c, p, false, line)) return *p;
    return *oob_slot<T>();
  }
  MGSIM_ALWAYS_INLINE const elem_ref &operator=(const T &v) const {
    if (check_elem(c, p, true, line, &v)) *p = v;
    return *this;
  }
  MGSIM_ALWAYS_INLINE const elem_ref &operator=(const elem_ref &o) const { return *this = T(o); }
  template <class U>
  MGSIM_ALWAYS_INLINE const elem_ref &operator=(const elem_ref<U> &o) const {
    return *this = T(U(o));
  }
  MGSIM_ALWAYS_INLINE dptr<T> operator&() const { return dptr<T>(p, c); }
  // The element as an object, for member access and reference binding: checked (and marked
  // written) as a write, since what follows may store through it.
  MGSIM_ALWAYS_INLINE T &mg_object() const {
    if (check_elem(c, p, true, line)) return *p;
    return *oob_slot<T>();
  }

#define MGSIM_COMPOUND(op)                                             \
  template <class U>                                                   \
  MGSIM_ALWAYS_INLINE const elem_ref &operator op(const U &v) const {  \
    T t = T(*this);                                                    \
    t op v;                                                            \
    return *this = t;                                                  \
  }
  MGSIM_COMPOUND(+=)
  MGSIM_COMPOUND(-=)
  MGSIM_COMPOUND(*=)
  MGSIM_COMPOUND(/=)
  MGSIM_COMPOUND(%=)
  MGSIM_COMPOUND(&=)
  MGSIM_COMPOUND(|=)
  MGSIM_COMPOUND(^=)
  MGSIM_COMPOUND(<<=)
  MGSIM_COMPOUND(>>=)
#undef MGSIM_COMPOUND
  MGSIM_ALWAYS_INLINE const elem_ref &operator++() const {
    T t = T(*this);
    ++t;
    return *this = t;
  }
  MGSIM_ALWAYS_INLINE const elem_ref &operator--() const {
    T t = T(*this);
    --t;
    return *this = t;
  }
  MGSIM_ALWAYS_INLINE T operator++(int) const {
    T t = T(*this);
    T u = t;
    ++u;
    *this = u;
    return t;
  }
  MGSIM_ALWAYS_INLINE T operator--(int) const {
    T t = T(*this);
    T u = t;
    --u;
    *this = u;
    return t;
  }
};

template <class T>
struct is_dptr : std::false_type {};
template <class T>
struct is_dptr<dptr<T>> : std::true_type {};

namespace impl {
template <class X>
struct is_elem_ref : std::false_type {};
template <class T>
struct is_elem_ref<elem_ref<T>> : std::true_type {};

// In checked mode the translator wraps every element access through a checked pointer whose
// value is used (p[i] not followed by an assignment): rd gives the element's value, as an element
// read in Metal is, so template argument deduction (pick(p[i], 2.0f)), auto and generic lambdas
// see T, not the reference proxy. Anything else passes through unchanged.
template <class X>
MGSIM_ALWAYS_INLINE decltype(auto) rd(X &&x) {
  using R = std::remove_cv_t<std::remove_reference_t<X>>;
  if constexpr (is_elem_ref<R>::value) {
    using T = typename R::mgsim_value_type;
    return T(x.operator T());
  } else {
    return std::forward<X>(x);
  }
}
// p[i].member, p[i][k], p[i].f(...) and `T& r = p[i]`: the element as an lvalue of T.
template <class X>
MGSIM_ALWAYS_INLINE decltype(auto) wr(X &&x) {
  using R = std::remove_cv_t<std::remove_reference_t<X>>;
  if constexpr (is_elem_ref<R>::value) return x.mg_object();
  else return std::forward<X>(x);
}
}  // namespace impl

// A device/constant pointer in checked mode: carries its binding so every access is bounds-checked
// against the bound length. Pointers that did not come from a binding (b == null) are unchecked.
template <class T>
struct dptr {
  using element_type = T;
  T *p = nullptr;
  ck c;               // the binding (c.b null: unchecked) and its fields
  uint32_t line = 0;  // source line of the access being made (race reports): see mg_line

  dptr() = default;
  dptr(decltype(nullptr)) {}
  MGSIM_ALWAYS_INLINE dptr(T *p_, const abi::check_binding *b_) : p(p_), c(b_, ck_elem<T>()) {}
  MGSIM_ALWAYS_INLINE dptr(T *p_, const ck &c_) : p(p_), c(c_) {}
  // A binding's pointer at its base (bind_buffer, bind_threadgroup): p_ is b_->base when b_ is set.
  struct at_base {};
  MGSIM_ALWAYS_INLINE dptr(at_base, T *p_, const abi::check_binding *b_)
      : p(p_), c(b_, ck_elem<T>(), const_cast<char *>(reinterpret_cast<const char *>(p_))) {}
  MGSIM_ALWAYS_INLINE explicit dptr(T *raw) : p(raw) {}
  template <class U, std::enable_if_t<std::is_convertible<U *, T *>::value, int> = 0>
  MGSIM_ALWAYS_INLINE dptr(const dptr<U> &o) : p(o.p), c(ck_elem<U>() == ck_elem<T>() ? o.c : o.c.as(ck_elem<T>())) {}
  // Reinterpreting casts between device pointer types keep the binding (and so the check).
  template <class U, std::enable_if_t<!std::is_convertible<U *, T *>::value, int> = 0>
  MGSIM_ALWAYS_INLINE explicit dptr(const dptr<U> &o)
      : p(reinterpret_cast<T *>(const_cast<std::remove_const_t<U> *>(o.p))),
        c(ck_elem<U>() == ck_elem<T>() ? o.c : o.c.as(ck_elem<T>())) {}

  MGSIM_ALWAYS_INLINE explicit operator T *() const { return p; }
  MGSIM_ALWAYS_INLINE explicit operator bool() const { return p != nullptr; }
  // The same pointer for one access at source line `l` (the translator writes p.mg_line(l)[i]).
  MGSIM_ALWAYS_INLINE dptr mg_line(uint32_t l) const {
    dptr d = *this;
    d.line = l;
    return d;
  }

  // An element of an array element type (threadgroup float a[4][8]: a[i]) is the row itself.
  using ref = std::conditional_t<std::is_array<T>::value, dptr<std::remove_extent_t<T>>,
                                 std::conditional_t<std::is_const<T>::value, const T &, elem_ref<T>>>;
  MGSIM_ALWAYS_INLINE ref at(T *q) const {
    if constexpr (std::is_array<T>::value) {
      dptr<std::remove_extent_t<T>> row(&(*q)[0], c.as(ck_elem<std::remove_extent_t<T>>()));
      row.line = line;
      return row;
    } else if constexpr (std::is_const<T>::value) {
      if (check_elem(c, q, false, line)) return *q;
      return *oob_slot<std::remove_const_t<T>>();
    } else {
      return elem_ref<T>{q, c, line};
    }
  }
  template <class I, std::enable_if_t<std::is_integral<I>::value || std::is_enum<I>::value, int> = 0>
  MGSIM_ALWAYS_INLINE ref operator[](I i) const {
    return at(p + i);
  }
  template <class I, std::enable_if_t<!std::is_integral<I>::value && !std::is_enum<I>::value &&
                                          std::is_convertible<I, long>::value, int> = 0>
  MGSIM_ALWAYS_INLINE ref operator[](const I &i) const {
    return at(p + long(i));
  }
  MGSIM_ALWAYS_INLINE ref operator*() const { return at(p); }
  MGSIM_ALWAYS_INLINE T *operator->() const {
    if (check_access_of<T>(c.b, p, sizeof(T), !std::is_const<T>::value)) return p;
    return oob_slot<std::remove_const_t<T>>();
  }

  template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>
  MGSIM_ALWAYS_INLINE dptr operator+(I i) const { return dptr(p + i, c); }
  template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>
  MGSIM_ALWAYS_INLINE dptr operator-(I i) const { return dptr(p - i, c); }
  template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>
  MGSIM_ALWAYS_INLINE friend dptr operator+(I i, const dptr &d) { return dptr(d.p + i, d.c); }
  template <class U>
  MGSIM_ALWAYS_INLINE ptrdiff_t operator-(const dptr<U> &o) const { return p - o.p; }
  template <class I>
  MGSIM_ALWAYS_INLINE dptr &operator+=(I i) { p += i; return *this; }
  template <class I>
  MGSIM_ALWAYS_INLINE dptr &operator-=(I i) { p -= i; return *this; }
  MGSIM_ALWAYS_INLINE dptr &operator++() { ++p; return *this; }
  MGSIM_ALWAYS_INLINE dptr &operator--() { --p; return *this; }
  MGSIM_ALWAYS_INLINE dptr operator++(int) { dptr t = *this; ++p; return t; }
  MGSIM_ALWAYS_INLINE dptr operator--(int) { dptr t = *this; --p; return t; }
  template <class U>
  MGSIM_ALWAYS_INLINE bool operator==(const dptr<U> &o) const { return p == o.p; }
  template <class U>
  MGSIM_ALWAYS_INLINE bool operator!=(const dptr<U> &o) const { return p != o.p; }
  template <class U>
  MGSIM_ALWAYS_INLINE bool operator<(const dptr<U> &o) const { return p < o.p; }
  template <class U>
  MGSIM_ALWAYS_INLINE bool operator>(const dptr<U> &o) const { return p > o.p; }
  template <class U>
  MGSIM_ALWAYS_INLINE bool operator<=(const dptr<U> &o) const { return p <= o.p; }
  template <class U>
  MGSIM_ALWAYS_INLINE bool operator>=(const dptr<U> &o) const { return p >= o.p; }
  MGSIM_ALWAYS_INLINE bool operator==(decltype(nullptr)) const { return p == nullptr; }
  MGSIM_ALWAYS_INLINE bool operator!=(decltype(nullptr)) const { return p != nullptr; }
};

// Found by ADL from the atomic and simdgroup-matrix helpers of mgsim_atomic.h /
// mgsim_simdgroup_matrix.h: bounds-checks `count` elements, tracks writes, returns a raw pointer.
template <class T>
struct is_atomic_object : std::false_type {};
template <class T>
struct is_atomic_object<::metal::atomic<T>> : std::true_type {};
template <class T>
struct is_atomic_object<const T> : is_atomic_object<T> {};
template <class T>
struct is_atomic_object<volatile T> : is_atomic_object<T> {};

template <class T>
MGSIM_ALWAYS_INLINE T *mgsim_resolve(dptr<T> d, size_t count, bool write, bool simdgroup = false) {
  // Atomics are exempt from race detection: concurrent atomic accesses are what they are for.
  if (check_access_of<T>(d.c.b, d.p, count * sizeof(T), write, d.line, nullptr, is_atomic_object<T>::value, simdgroup))
    return d.p;
  if (count * sizeof(T) > sizeof(oob_scratch)) return nullptr;
  memset(oob_scratch, 0, count * sizeof(T));
  return reinterpret_cast<T *>(oob_scratch);
}
// simdgroup_load / store through a checked pointer: one access of the whole simdgroup.
template <class T>
MGSIM_ALWAYS_INLINE T *mgsim_resolve_sg(dptr<T> d, size_t count, bool write) {
  return mgsim_resolve(d, count, write, true);
}

namespace impl {
// Checked mode: a threadgroup variable as a checked pointer to its storage (an array: to its first
// element), its binding set up on first use on this thread.
template <class T>
MGSIM_ALWAYS_INLINE auto tg_view(T &storage, abi::check_binding &b, const char *name) {
  if (!b.host) {
    const abi::launch *L = tls.launch;
    b.base = reinterpret_cast<char *>(&storage);
    b.length = sizeof(T);
    b.name = name;
    b.kind = 2;
    constexpr size_t es = sizeof(std::remove_all_extents_t<T>);
    b.granule_shift = es >= 4 ? 2u : es == 2 ? 1u : 0u;
    if (L && L->host) L->host->tg_register(&b);
  }
  if constexpr (std::is_array<T>::value) {
    return dptr<std::remove_extent_t<T>>(&storage[0], b.host ? &b : nullptr);
  } else {
    return dptr<T>(&storage, b.host ? &b : nullptr);
  }
}
}  // namespace impl

// Casts that keep checked pointers checked (the translator routes reinterpret_cast/static_cast
// of device pointer types here in checked mode). In mgsim::impl, like every helper a user call
// could otherwise find by argument-dependent lookup through a checked pointer's namespace.
namespace impl {
template <class To, class From>
MGSIM_ALWAYS_INLINE To ptr_cast(const From &f) {
  if constexpr (is_dptr<To>::value && is_dptr<From>::value) {
    return To(f);
  } else if constexpr (is_dptr<To>::value) {
    return To(reinterpret_cast<typename To::element_type *>(f));
  } else if constexpr (is_dptr<From>::value) {
    return reinterpret_cast<To>(f.p);
  } else {
    return reinterpret_cast<To>(f);
  }
}
}  // namespace impl

// --- parameter binding -------------------------------------------------------------------------

template <class F>
struct fn_params;
template <class R, class... A>
struct fn_params<R(A...)> {
  template <unsigned I>
  using at = std::tuple_element_t<I, std::tuple<A...>>;
};

template <class P>
struct elem_size {
  using Q = std::remove_cv_t<std::remove_reference_t<P>>;
  static constexpr uint32_t pointee() {
    if constexpr (std::is_pointer<Q>::value) {
      using E = std::remove_pointer_t<Q>;
      if constexpr (std::is_void<E>::value) return 1;
      else return sizeof(E);
    } else if constexpr (is_dptr<Q>::value) {
      return sizeof(typename Q::element_type);
    } else {
      return sizeof(Q);
    }
  }
  static constexpr uint32_t value = pointee();
  static constexpr uint32_t ref = std::is_reference<P>::value ? sizeof(Q) : 0;
  static constexpr bool to_const() {
    if constexpr (std::is_pointer<Q>::value) return std::is_const<std::remove_pointer_t<Q>>::value;
    else if constexpr (is_dptr<Q>::value) return std::is_const<typename Q::element_type>::value;
    else return false;
  }
  static constexpr uint32_t ro = to_const() ? 1u : 0u;
};

template <class P>
MGSIM_ALWAYS_INLINE P bind_buffer(const abi::launch *L, const abi::group *G, unsigned n) {
  using Q = std::remove_cv_t<std::remove_reference_t<P>>;
  if constexpr (std::is_reference<P>::value) {
    return *static_cast<std::remove_reference_t<P> *>(L->buffers[n]);
  } else if constexpr (std::is_pointer<Q>::value) {
    return static_cast<Q>(L->buffers[n]);
  } else if constexpr (is_dptr<Q>::value) {
    // The pointer from the binding's own base (the same address as L->buffers[n]): one load, so
    // the compiler sees p == base and an access's offset is its index, with one register less.
    const abi::check_binding *b = G->checks ? &G->checks[n] : L->checks ? &L->checks[n] : nullptr;
    return Q(typename Q::at_base{}, static_cast<typename Q::element_type *>(b ? static_cast<void *>(b->base) : L->buffers[n]), b);
  } else {
    static_assert(std::is_pointer<Q>::value,
                  "[mgsim] a [[buffer(n)]] parameter must be a device/constant pointer or reference");
    return P();
  }
}

template <class P>
MGSIM_ALWAYS_INLINE P bind_threadgroup(const abi::group *G, unsigned n) {
  using Q = std::remove_cv_t<std::remove_reference_t<P>>;
  if constexpr (std::is_reference<P>::value) {
    return *static_cast<std::remove_reference_t<P> *>(G->tg_mem[n]);
  } else if constexpr (is_dptr<Q>::value) {
    const abi::check_binding *b = G->tg_checks ? &G->tg_checks[n] : nullptr;
    return Q(typename Q::at_base{}, static_cast<typename Q::element_type *>(b ? static_cast<void *>(b->base) : G->tg_mem[n]), b);
  } else {
    static_assert(std::is_pointer<Q>::value,
                  "[mgsim] a [[threadgroup(n)]] parameter must be a threadgroup pointer or reference");
    return static_cast<Q>(G->tg_mem[n]);
  }
}

// A checked kernel's plain-loop entry (the translator's wrapper): optimised, the kernel and what it
// calls are flattened into the loop. A kernel function with external linkage is otherwise often
// called per thread, its checked pointers (fat when optimised) passed in memory. Not at tier 0
// (flattening there would double the code: the kernel is emitted anyway).
#ifdef __OPTIMIZE__
#define MGSIM_CHECKED_PLAIN __attribute__((flatten))
#else
#define MGSIM_CHECKED_PLAIN
#endif

// Runs every thread of a threadgroup as a plain loop (kernels without barriers or collectives).
// With `track` the running thread is published for checked mode and lane ids as a lazy record
// (only its index is stored per thread; full_attrs derives the rest where a report needs it).
template <class Body>
MGSIM_ALWAYS_INLINE void run_group_plain(const abi::launch *L, const abi::group *G, bool track,
                                         Body &&body) {
  abi::thread_attrs a, pub;
  pub.lane_id = kLazyAttrs;
  tls.lane = nullptr;
  tls.launch = L;
  tls.group = G;
  if (track) tls.attrs = &pub;
  publish_attrs(G);
  // Checked mode: the running thread as race_state::who (no barriers here: one interval). Stored
  // through a pointer to a local when not tracked: one unconditional store per thread.
  abi::race_state *const rs = track && G->race && G->race->group && G->nthreads <= 1024u ? G->race : nullptr;
  const uint64_t who = rs ? uint64_t(rs->group) | (uint64_t(rs->epoch < abi::kRaceEpochMax ? rs->epoch : abi::kRaceEpochMax) << 24) : 0;
  uint64_t who_unused = 0;
  uint64_t *const who_slot = rs ? &rs->who : &who_unused;
  constexpr uint64_t kWhoStep = uint64_t(1) << 36;  // the next thread index
  const uint32_t sx = G->size[0], sy = G->size[1];
  // The box in locals: the kernel's stores (checked mode's records) could alias *G.
  const uint32_t x0 = G->from[0], x1 = G->to[0], y0 = G->from[1], y1 = G->to[1], z0 = G->from[2], z1 = G->to[2];
  const uint32_t bx = G->id[0] * L->threads_per_threadgroup[0];
  const uint32_t by = G->id[1] * L->threads_per_threadgroup[1];
  const uint32_t bz = G->id[2] * L->threads_per_threadgroup[2];
  auto thread = [&](uint32_t x, uint32_t y, uint32_t z, uint32_t idx, uint64_t whov) __attribute__((always_inline)) {
    a.grid[0] = bx + x;
    a.grid[1] = by + y;
    a.grid[2] = bz + z;
    a.local[0] = x;
    a.local[1] = y;
    a.local[2] = z;
    a.index = idx;
    a.lane_id = idx & 31u;
    a.simd_id = idx >> 5;
    if (track) pub.index = idx;
    if (track) *who_slot = whov;
    body(static_cast<const abi::thread_attrs &>(a));
  };
  for (uint32_t z = z0; z < z1; ++z)
    for (uint32_t y = y0; y < y1; ++y) {
      uint32_t idx = (z * sy + y) * sx + x0;
      if (track) {
        // One induction variable (the thread index; x derived from it): a second one and its limit
        // took two of the registers a checked loop's pointer fields need (checked axpb: -2 Ir per
        // element; an untracked loop does better with x: +0.14 Ir that way).
        const uint32_t row = idx - x0, end = row + x1;
        uint64_t whov = who | (uint64_t(idx) << 36);  // idx < 1024 when tracked (rs)
        for (; idx < end; ++idx, whov += kWhoStep) thread(idx - row, y, z, idx, whov);
      } else {
        for (uint32_t x = x0; x < x1; ++x, ++idx) thread(x, y, z, idx, 0);
      }
    }
  if (rs) rs->who = 0;
  if (track) tls.attrs = nullptr;
}

}  // namespace mgsim

// --- barriers and simd collectives (namespace metal) -------------------------------------------

namespace metal {

enum class mem_flags : uint32_t {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
constexpr mem_flags operator|(mem_flags a, mem_flags b) {
  return mem_flags(uint32_t(a) | uint32_t(b));
}
constexpr mem_flags operator&(mem_flags a, mem_flags b) {
  return mem_flags(uint32_t(a) & uint32_t(b));
}

inline void threadgroup_barrier(mgsim::site, mem_flags = mem_flags::mem_none) {
  mgsim::abi::lane *me = mgsim::tls.lane;
  if (!me) return mgsim::misuse("threadgroup_barrier");
  me->combine = nullptr;
  mgsim::block(me, mgsim::abi::block_barrier, 0);
}
inline void threadgroup_barrier(mem_flags = mem_flags::mem_none) {
  threadgroup_barrier(mgsim::site{0});
}
inline void simdgroup_barrier(mgsim::site s, mem_flags = mem_flags::mem_none) {
  mgsim::abi::lane *me = mgsim::tls.lane;
  if (!me) return mgsim::misuse("simdgroup_barrier");
  me->combine = nullptr;
  mgsim::block(me, mgsim::abi::block_simd, (uint64_t(1) << 63) | s.id);
}
MGSIM_ALWAYS_INLINE void simdgroup_barrier(mem_flags = mem_flags::mem_none) {
  mgsim::abi::lane *me = mgsim::tls.lane;
  if (!me) return mgsim::misuse("simdgroup_barrier");
  me->combine = nullptr;
  mgsim::block(me, mgsim::abi::block_simd, mgsim::call_site_token());
}

// simd_ballot's result (MSL's simd_vote).
class simd_vote {
 public:
  using vote_t = uint64_t;
  constexpr explicit simd_vote(vote_t v = 0) : v_(v) {}
  constexpr explicit operator vote_t() const { return v_; }
  constexpr bool all() const { return v_ == 0xffffffffull; }
  constexpr bool any() const { return v_ != 0; }

 private:
  vote_t v_;
};

}  // namespace metal

namespace mgsim {

inline uint64_t site_token(site s) { return (uint64_t(1) << 63) | s.id; }

namespace impl {

// Blocks the lane until every live lane of its simdgroup is blocked; lanes at the same call site
// form the active set, whose combine the host runs once before the members resume.
template <class T, class Compute>
MGSIM_ALWAYS_INLINE T collective(uint64_t token, const T &x, uint32_t arg, const char *what,
                                 Compute compute) {
  // MSL vector types have user-provided assignment, so "trivially copyable" is too strict; values
  // move between lanes as bytes, which needs only a trivial destructor and a copy constructor.
  static_assert(std::is_trivially_destructible<T>::value && std::is_copy_constructible<T>::value,
                "[mgsim] simd collectives need a plain value type");
  abi::lane *me = tls.lane;
  if (!me) {
    misuse(what);
    return x;
  }
  alignas(T) unsigned char res[sizeof(T)];
  me->in = &x;
  me->out = res;
  me->arg = arg;
  me->combine = compute;  // a captureless lambda: one function per collective and type
  block(me, abi::block_simd, token);
  return T(*reinterpret_cast<const T *>(res));
}

template <class T>
MGSIM_ALWAYS_INLINE const T &in_of(const abi::lane &l) {
  return *static_cast<const T *>(l.in);
}
template <class T>
MGSIM_ALWAYS_INLINE void set_out(const abi::lane &l, const T &v) {
  memcpy(l.out, static_cast<const void *>(&v), sizeof(T));
}

// Folds the active lanes' values in lane order and gives every member the result.
template <class T, class Op>
inline void reduce_all(abi::lane *base, uint32_t mask, Op op) {
  uint32_t m = mask;
  int first = __builtin_ctz(m);
  T acc = in_of<T>(base[first]);
  for (m &= m - 1; m; m &= m - 1) acc = op(acc, in_of<T>(base[__builtin_ctz(m)]));
  for (m = mask; m; m &= m - 1) set_out(base[__builtin_ctz(m)], acc);
}

template <class T, class Op>
inline void scan(abi::lane *base, uint32_t mask, T identity, bool inclusive, Op op) {
  T acc = identity;
  for (uint32_t m = mask; m; m &= m - 1) {
    const abi::lane &l = base[__builtin_ctz(m)];
    T v = in_of<T>(l);
    if (inclusive) {
      acc = op(acc, v);
      set_out(l, acc);
    } else {
      set_out(l, acc);
      acc = op(acc, v);
    }
  }
}

// Every member reads lane src(j); a source outside the active set keeps the member's own value.
template <class T, class Src>
inline void permute(abi::lane *base, uint32_t mask, Src src) {
  for (uint32_t m = mask; m; m &= m - 1) {
    uint32_t j = uint32_t(__builtin_ctz(m));
    int64_t s = src(j, base[j].arg);
    if (s >= 0 && s < 32 && (mask >> s) & 1u) set_out(base[j], in_of<T>(base[s]));
    else set_out(base[j], in_of<T>(base[j]));
  }
}

template <class E>
constexpr bool simd_scalar_ok =
    std::is_same<E, char>::value || std::is_same<E, signed char>::value || std::is_same<E, unsigned char>::value ||
    std::is_same<E, short>::value || std::is_same<E, unsigned short>::value || std::is_same<E, int>::value ||
    std::is_same<E, unsigned int>::value || std::is_same<E, lang::half>::value || std::is_same<E, float>::value ||
    std::is_same<E, lang::bfloat>::value;
template <class T>
struct simd_elem {
  using type = T;
};
template <class T, int N>
struct simd_elem<lang::vec<T, N>> {
  using type = T;
};
template <class T>
constexpr bool simd_type_ok = simd_scalar_ok<typename simd_elem<T>::type>;
template <class T>
constexpr bool simd_int_ok = simd_type_ok<T> && std::is_integral<typename simd_elem<T>::type>::value;

template <class T>
MGSIM_ALWAYS_INLINE T op_max(const T &a, const T &b) {
  if constexpr (std::is_arithmetic<T>::value) {
    if constexpr (std::is_floating_point<T>::value) {
      if (a != a) return b;  // NaN loses, as fmax
      if (b != b) return a;
    }
    return b > a ? b : a;
  } else {
    using namespace metal;
    return max(a, b);
  }
}
template <class T>
MGSIM_ALWAYS_INLINE T op_min(const T &a, const T &b) {
  if constexpr (std::is_arithmetic<T>::value) {
    if constexpr (std::is_floating_point<T>::value) {
      if (a != a) return b;
      if (b != b) return a;
    }
    return b < a ? b : a;
  } else {
    using namespace metal;
    return min(a, b);
  }
}
}  // namespace impl

}  // namespace mgsim

namespace metal {

// SIMD-group functions take a scalar or vector of char, short, int (signed or unsigned), half,
// float or bfloat: not bool, long, ulong, size_t or a structure; the bitwise reductions take
// integers only (MSL §6.9.2). A value proxy (a checked-mode element) is taken as its value.
#define MGSIM_SIMD_CHECK(NAME, T, INT_ONLY)                                                        \
  static_assert(mgsim::impl::simd_type_ok<T>,                                                      \
                "MSL: " #NAME " takes a scalar or vector of char, short, int, half, float or "     \
                "bfloat (signed or unsigned), not bool, long, ulong or a structure (MSL 6.9.2)");  \
  static_assert(!(INT_ONLY) || mgsim::impl::simd_int_ok<T>,                                        \
                "MSL: " #NAME " is a bitwise reduction: it takes an integer scalar or vector "     \
                "(MSL 6.9.2)")

#define MGSIM_REDUCE(NAME, EXPR, INT_ONLY)                                                         \
  template <class X, class T = mgsim::lang::value_t<X>>                                            \
  MGSIM_ALWAYS_INLINE T NAME(mgsim::site s, X x) {                                                 \
    MGSIM_SIMD_CHECK(NAME, T, INT_ONLY);                                                           \
    return mgsim::impl::collective<T>(                                                             \
        mgsim::site_token(s), T(mgsim::impl::rd(x)), 0, #NAME, [](mgsim::abi::lane *b, uint32_t m) { \
          mgsim::impl::reduce_all<T>(b, m, [](const T &a, const T &c) { return EXPR; });           \
        });                                                                                        \
  }                                                                                                \
  template <class X, class T = mgsim::lang::value_t<X>>                                            \
  MGSIM_ALWAYS_INLINE T NAME(X x) {                                                                \
    MGSIM_SIMD_CHECK(NAME, T, INT_ONLY);                                                           \
    return mgsim::impl::collective<T>(                                                             \
        mgsim::call_site_token(), T(mgsim::impl::rd(x)), 0, #NAME, [](mgsim::abi::lane *b, uint32_t m) { \
          mgsim::impl::reduce_all<T>(b, m, [](const T &a, const T &c) { return EXPR; });           \
        });                                                                                        \
  }
MGSIM_REDUCE(simd_sum, T(a + c), false)
MGSIM_REDUCE(simd_product, T(a * c), false)
MGSIM_REDUCE(simd_max, mgsim::impl::op_max<T>(a, c), false)
MGSIM_REDUCE(simd_min, mgsim::impl::op_min<T>(a, c), false)
MGSIM_REDUCE(simd_and, T(a & c), true)
MGSIM_REDUCE(simd_or, T(a | c), true)
MGSIM_REDUCE(simd_xor, T(a ^ c), true)
#undef MGSIM_REDUCE

#define MGSIM_SCAN(NAME, IDENTITY, INCL, EXPR)                                                     \
  template <class X, class T = mgsim::lang::value_t<X>>                                            \
  MGSIM_ALWAYS_INLINE T NAME(mgsim::site s, X x) {                                                 \
    MGSIM_SIMD_CHECK(NAME, T, false);                                                              \
    return mgsim::impl::collective<T>(                                                             \
        mgsim::site_token(s), T(mgsim::impl::rd(x)), 0, #NAME, [](mgsim::abi::lane *b, uint32_t m) { \
          mgsim::impl::scan<T>(b, m, T(IDENTITY), INCL, [](const T &a, const T &c) { return EXPR; }); \
        });                                                                                        \
  }                                                                                                \
  template <class X, class T = mgsim::lang::value_t<X>>                                            \
  MGSIM_ALWAYS_INLINE T NAME(X x) {                                                                \
    MGSIM_SIMD_CHECK(NAME, T, false);                                                              \
    return mgsim::impl::collective<T>(                                                             \
        mgsim::call_site_token(), T(mgsim::impl::rd(x)), 0, #NAME, [](mgsim::abi::lane *b, uint32_t m) { \
          mgsim::impl::scan<T>(b, m, T(IDENTITY), INCL, [](const T &a, const T &c) { return EXPR; }); \
        });                                                                                        \
  }
MGSIM_SCAN(simd_prefix_inclusive_sum, 0, true, T(a + c))
MGSIM_SCAN(simd_prefix_exclusive_sum, 0, false, T(a + c))
MGSIM_SCAN(simd_prefix_inclusive_product, 1, true, T(a * c))
MGSIM_SCAN(simd_prefix_exclusive_product, 1, false, T(a * c))
#undef MGSIM_SCAN

// SRC maps (lane j, its argument a) to the source lane.
#define MGSIM_PERMUTE(NAME, SRC)                                                                   \
  template <class X, class I, class T = mgsim::lang::value_t<X>>                                   \
  MGSIM_ALWAYS_INLINE T NAME(mgsim::site s, X x, I arg) {                                          \
    MGSIM_SIMD_CHECK(NAME, T, false);                                                              \
    return mgsim::impl::collective<T>(mgsim::site_token(s), T(mgsim::impl::rd(x)), uint32_t(arg), #NAME, \
                                      [](mgsim::abi::lane *b, uint32_t m) {                        \
                                        mgsim::impl::permute<T>(b, m, [m](uint32_t j, uint32_t a) { \
                                          (void)m;                                                 \
                                          return int64_t(SRC);                                     \
                                        });                                                        \
                                      });                                                          \
  }                                                                                                \
  template <class X, class I, class T = mgsim::lang::value_t<X>>                                   \
  MGSIM_ALWAYS_INLINE T NAME(X x, I arg) {                                                         \
    MGSIM_SIMD_CHECK(NAME, T, false);                                                              \
    return mgsim::impl::collective<T>(mgsim::call_site_token(), T(mgsim::impl::rd(x)), uint32_t(arg), \
                                      #NAME, [](mgsim::abi::lane *b, uint32_t m) {                 \
                                        mgsim::impl::permute<T>(b, m, [m](uint32_t j, uint32_t a) { \
                                          (void)m;                                                 \
                                          return int64_t(SRC);                                     \
                                        });                                                        \
                                      });                                                          \
  }
MGSIM_PERMUTE(simd_shuffle, a)
MGSIM_PERMUTE(simd_broadcast, a)
MGSIM_PERMUTE(simd_shuffle_xor, (j ^ a) & 31u)
MGSIM_PERMUTE(simd_shuffle_up, int64_t(j) - int64_t(a))
MGSIM_PERMUTE(simd_shuffle_down, int64_t(j) + int64_t(a))
MGSIM_PERMUTE(simd_shuffle_rotate_up, (j + 32u - (a & 31u)) & 31u)
MGSIM_PERMUTE(simd_shuffle_rotate_down, (j + a) & 31u)
#undef MGSIM_PERMUTE

template <class X, class T = mgsim::lang::value_t<X>>
MGSIM_ALWAYS_INLINE T simd_broadcast_first(mgsim::site s, X x) {
  MGSIM_SIMD_CHECK(simd_broadcast_first, T, false);
  return mgsim::impl::collective<T>(mgsim::site_token(s), T(mgsim::impl::rd(x)), 0, "simd_broadcast_first",
                                    [](mgsim::abi::lane *b, uint32_t m) {
                                      mgsim::impl::permute<T>(b, m, [m](uint32_t, uint32_t) {
                                        return int64_t(__builtin_ctz(m));
                                      });
                                    });
}
template <class X, class T = mgsim::lang::value_t<X>>
MGSIM_ALWAYS_INLINE T simd_broadcast_first(X x) {
  MGSIM_SIMD_CHECK(simd_broadcast_first, T, false);
  return mgsim::impl::collective<T>(mgsim::call_site_token(), T(mgsim::impl::rd(x)), 0, "simd_broadcast_first",
                                    [](mgsim::abi::lane *b, uint32_t m) {
                                      mgsim::impl::permute<T>(b, m, [m](uint32_t, uint32_t) {
                                        return int64_t(__builtin_ctz(m));
                                      });
                                    });
}
#undef MGSIM_SIMD_CHECK

namespace mgsim_detail {
// Gives each member the active-set bit mask of lanes whose input was true.
inline void vote(mgsim::abi::lane *b, uint32_t m) {
  uint64_t bits = 0;
  for (uint32_t k = m; k; k &= k - 1) {
    uint32_t j = uint32_t(__builtin_ctz(k));
    if (mgsim::impl::in_of<bool>(b[j])) bits |= uint64_t(1) << j;
  }
  for (uint32_t k = m; k; k &= k - 1) mgsim::impl::set_out(b[__builtin_ctz(k)], bits);
}
inline uint64_t vote_bits(uint64_t token, bool x, const char *what) {
  // The result type (uint64) differs from the input (bool): vote through a uint64 carrier.
  mgsim::abi::lane *me = mgsim::tls.lane;
  if (!me) {
    mgsim::misuse(what);
    return x ? 1u : 0u;
  }
  uint64_t res = 0;
  me->in = &x;
  me->out = &res;
  me->arg = 0;
  me->combine = &vote;
  mgsim::block(me, mgsim::abi::block_simd, token);
  return res;
}
inline uint64_t active_bits(uint64_t token) {
  mgsim::abi::lane *me = mgsim::tls.lane;
  if (!me) return 1u;
  bool t = true;
  uint64_t res = 0;
  me->in = &t;
  me->out = &res;
  me->arg = 0;
  me->combine = &vote;
  mgsim::block(me, mgsim::abi::block_simd, token);
  return res;
}
}  // namespace mgsim_detail

inline simd_vote simd_ballot(mgsim::site s, bool x) {
  return simd_vote(mgsim_detail::vote_bits(mgsim::site_token(s), x, "simd_ballot"));
}
MGSIM_ALWAYS_INLINE simd_vote simd_ballot(bool x) {
  return simd_vote(mgsim_detail::vote_bits(mgsim::call_site_token(), x, "simd_ballot"));
}
inline bool simd_any(mgsim::site s, bool x) {
  return mgsim_detail::vote_bits(mgsim::site_token(s), x, "simd_any") != 0;
}
MGSIM_ALWAYS_INLINE bool simd_any(bool x) {
  return mgsim_detail::vote_bits(mgsim::call_site_token(), x, "simd_any") != 0;
}
// simd_all: every active lane's value is true (inactive lanes do not count).
inline bool simd_all(mgsim::site s, bool x) {
  mgsim::abi::lane *me = mgsim::tls.lane;
  uint64_t v = mgsim_detail::vote_bits(mgsim::site_token(s), x, "simd_all");
  return me ? v == me->active : v != 0;
}
MGSIM_ALWAYS_INLINE bool simd_all(bool x) {
  mgsim::abi::lane *me = mgsim::tls.lane;
  uint64_t v = mgsim_detail::vote_bits(mgsim::call_site_token(), x, "simd_all");
  return me ? v == me->active : v != 0;
}
inline simd_vote simd_active_threads_mask(mgsim::site s) {
  return simd_vote(mgsim_detail::active_bits(mgsim::site_token(s)));
}
MGSIM_ALWAYS_INLINE simd_vote simd_active_threads_mask() {
  return simd_vote(mgsim_detail::active_bits(mgsim::call_site_token()));
}
inline bool simd_is_first(mgsim::site s) {
  mgsim::abi::lane *me = mgsim::tls.lane;
  uint64_t v = mgsim_detail::active_bits(mgsim::site_token(s));
  return me ? (v & (~v + 1)) == (uint64_t(1) << me->a.lane_id) : true;
}
MGSIM_ALWAYS_INLINE bool simd_is_first() {
  mgsim::abi::lane *me = mgsim::tls.lane;
  uint64_t v = mgsim_detail::active_bits(mgsim::call_site_token());
  return me ? (v & (~v + 1)) == (uint64_t(1) << me->a.lane_id) : true;
}

}  // namespace metal

namespace mgsim {

// The collective mgsim_simdgroup_matrix.h declares: simdgroup_matrix::thread_elements() writers
// gather every live lane's fragment before a multiply or store. Every live lane passes `bytes`
// bytes at `mine`; every lane receives them at `all + lane * bytes` (other slots are untouched).
// Not inlined: its return address names the calling instantiation (one per element type), which
// keeps gathers of different sizes apart.
inline void allgather_combine(abi::lane *base, uint32_t mask) {
  for (uint32_t to = mask; to; to &= to - 1) {
    unsigned char *dst = static_cast<unsigned char *>(base[__builtin_ctz(to)].out);
    for (uint32_t from = mask; from; from &= from - 1) {
      const uint32_t l = uint32_t(__builtin_ctz(from));
      memcpy(dst + size_t(l) * base[l].arg, base[l].in, base[l].arg);
    }
  }
}
MGSIM_NOINLINE inline void simdgroup_allgather(const void *mine, void *all, unsigned bytes) {
  abi::lane *me = tls.lane;
  if (!me) {
    misuse("simdgroup_matrix::thread_elements()");
    memcpy(static_cast<unsigned char *>(all) + size_t(simd_lane_id()) * bytes, mine, bytes);
    return;
  }
  me->in = mine;
  me->out = all;
  me->arg = bytes;
  me->combine = &allgather_combine;
  block(me, abi::block_simd, reinterpret_cast<uint64_t>(__builtin_return_address(0)));
}

}  // namespace mgsim

#endif  // MGSIM_ABI_ONLY
#endif  // MGSIM_EXEC_H
