// Dispatch execution: a worker pool runs threadgroups in parallel; inside a threadgroup, lanes run
// as a plain loop (generated in the kernel object) or as cooperative fibers scheduled here.
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "fiber.h"
#include "guard.h"
#include "sim_internal.h"

namespace mgsim {
namespace {

constexpr uint64_t kThreadgroupMemoryLimit = 32768;
constexpr int kMaxReportedViolations = 8;
constexpr uint32_t kMaxLanes = 1024;  // threads per threadgroup (the translator's maximum too)

struct Worker;

// Host-side state of one lane: its saved context and the call site it is blocked at.
struct LaneHost {
  FiberContext ctx;
  uint64_t token = 0;
  Worker *worker = nullptr;
  const abi::kernel_desc *kd = nullptr;
  abi::lane *ln = nullptr;
};

// How a threadgroup's fibers ended when control came back to the worker's main context.
enum class GroupEnd : uint32_t { kDone, kPartialBarrier };

// Per-OS-thread state: fiber stacks (mmap'd once, a guard region below each, reused), lanes, the
// scheduler's bookkeeping for the threadgroup this thread runs, its dynamic threadgroup memory and
// its fault record (guard.h).
//
// Scheduling: lanes switch directly to one another (never through a scheduler context). A lane that
// blocks hands over to the next ready lane of its simdgroup; when its simdgroup has none left, the
// lanes blocked at collectives are grouped by call site and each group's combine runs at once, so
// the lane that completed a collective continues without a context switch. When no simdgroup has a
// ready lane, every live lane is at threadgroup_barrier (or the group is done): the barrier opens.
struct Worker {
  FiberContext main;  // the worker's own stack: entered when the threadgroup is done or fails
  std::vector<abi::lane> lanes;
  std::vector<LaneHost> hosts;
  std::vector<char *> stacks;
  size_t stack_size = 0;
  size_t guard = 0;
  // Scheduler state of the current threadgroup. Bit l of a per-simdgroup mask is lane 32 * s + l.
  uint32_t nsg = 0;
  uint32_t ready[32]{};       // runnable
  uint32_t at_simd[32]{};     // blocked at a simd collective or simdgroup_barrier
  uint32_t at_barrier[32]{};  // blocked at threadgroup_barrier
  uint32_t sg_ready = 0;      // bit per simdgroup with a ready lane
  uint32_t exited = 0, barrier_count = 0;
  GroupEnd end = GroupEnd::kDone;
  abi::race_state *race = nullptr;  // checked mode: the running group's race state
  // The kernel object's thread-local current lane on this thread (one module per threadgroup).
  abi::lane **tls_lane_slot = nullptr;
  const abi::thread_attrs **tls_attrs_slot = nullptr;
  // Lanes [0, parked) hold a context parked after exiting a kernel, ready for the next group.
  uint32_t parked = 0;
  // The dispatch (serial number) and threadgroup shape the lanes' fixed fields were set for.
  uint64_t shaped_for = 0;
  uint32_t shape[3]{};
  // Fault recovery: this thread's record (null if none was free), where the attributes of the lane
  // running kernel code are published for a fault report, and the threadgroup being run.
  FaultRecord *rec = this_thread_fault_record();
  const abi::thread_attrs *unrecorded_current = nullptr;
  const abi::thread_attrs **current = rec ? &rec->current : &unrecorded_current;
  uint64_t group_linear = 0;
  // Work-item mode: the lanes' attributes, per-lane storage (reserved address space, touched as
  // used) and the context the kernel runs a threadgroup with.
  std::vector<abi::thread_attrs> wi_attrs;
  uint64_t wi_shaped_for = 0;
  uint32_t wi_shape[3]{};
  char *wi_arena = nullptr;
  size_t wi_arena_cap = 0;
  abi::wi_ctx wc{};
  // Checked mode: the running threadgroup's place in time, and the race records of threadgroup
  // memory (the threadgroup(n) block, and each threadgroup variable met on this thread).
  abi::race_state race_run{};
  abi::check_binding tg_checks[abi::kMaxBindings]{};
  abi::check_binding checks[abi::kMaxBindings]{};  // the dispatch's bindings, with rs = &race_run
  uint64_t checks_for = 0;                          // of dispatch serial
  uint64_t tg_checks_for = 0;                       // tg_checks: of dispatch serial
  std::vector<abi::tg_shadow> tg_mem_shadow;
  std::vector<std::unique_ptr<abi::tg_shadow[]>> tg_var_shadows;
  alignas(64) unsigned char tg_mem[kThreadgroupMemoryLimit + 64 * abi::kMaxBindings];

  ~Worker() {
    if (wi_arena) munmap(wi_arena, wi_arena_cap);
    for (char *s : stacks) munmap(s - guard, stack_size + guard);
    for (auto &h : hosts) fiber_destroy(h.ctx);
    fiber_destroy(main);
  }

  bool ensure_lanes(uint32_t n, std::string &error) {
    if (stack_size == 0) {
      size_t kb = 256;
      if (const char *e = getenv("MG_SIM_STACK_KB")) {
        long v = atol(e);
        if (v >= 16 && v <= 65536) kb = size_t(v);
      }
      const size_t page = size_t(sysconf(_SC_PAGESIZE));
      // Kernels are compiled with stack-clash probes, so an overflow faults in the guard region
      // (64 KiB of address space: a frame that skips it would otherwise land in another stack).
      guard = std::max<size_t>(page, 64 * 1024) / page * page;
      stack_size = (kb * 1024 + page - 1) / page * page;
    }
    if (lanes.empty()) {  // never reallocated: parked lanes' frames point into these arrays
      lanes.resize(kMaxLanes);
      hosts.resize(kMaxLanes);
    }
    if (n > kMaxLanes) {
      error = "threadgroup of " + std::to_string(n) + " threads exceeds " + std::to_string(kMaxLanes);
      return false;
    }
    while (stacks.size() < n) {
      void *p = mmap(nullptr, stack_size + guard, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) {
        error = "cannot map fiber stacks for " + std::to_string(n) + " lanes";
        return false;
      }
      mprotect(p, guard, PROT_NONE);  // overflow faults instead of corrupting the next stack
      stacks.push_back(static_cast<char *>(p) + guard);
    }
    return true;
  }

  // Switches from lane `me` (or the main context when me is null) to lane i, pointing the kernel
  // object's thread-local current lane at it (known once a lane has blocked; a lane that has not
  // started sets them itself).
  void resume(LaneHost *me, uint32_t i) {
    *current = &lanes[i].a;
    if (tls_lane_slot) {
      *tls_lane_slot = &lanes[i];
      *tls_attrs_slot = &lanes[i].a;
    }
    fiber_switch(me ? me->ctx : main, hosts[i].ctx);
  }

  // The lanes of simdgroup s blocked at collectives, grouped by call site: each group's combine
  // runs and its lanes become ready.
  void release_collectives(uint32_t s) {
    uint32_t pending = at_simd[s];
    abi::lane *base = &lanes[size_t(s) * 32];
    LaneHost *hb = &hosts[size_t(s) * 32];
    while (pending) {
      const uint32_t first = uint32_t(__builtin_ctz(pending));
      const uint64_t token = hb[first].token;
      const abi::combine_fn combine = base[first].combine;
      uint32_t set = 0;
      for (uint32_t m = pending; m; m &= m - 1) {
        const uint32_t l = uint32_t(__builtin_ctz(m));
        if (hb[l].token == token && base[l].combine == combine) set |= 1u << l;
      }
      if (combine) combine(base, set);
      if (race) ++race->simd_epoch[s];  // checked mode: a simdgroup-level sync
      for (uint32_t m = set; m; m &= m - 1) base[__builtin_ctz(m)].active = set;
      pending &= ~set;
      ready[s] |= set;
    }
    at_simd[s] = 0;
    sg_ready |= 1u << s;
  }

  // Called by lane `me` (lane index i) once its state says why it stopped: runs other lanes until
  // `me` may continue, then returns. An exited lane never continues: when no lane can run, control
  // goes back to the main context.
  __attribute__((noinline)) void schedule(LaneHost *me, uint32_t i) {
    const uint32_t s = i >> 5, b = i & 31u;
    for (;;) {
      if (ready[s]) {
        const uint32_t above = b == 31 ? 0u : ready[s] & (~0u << (b + 1));
        const uint32_t next = uint32_t(__builtin_ctz(above ? above : ready[s]));
        if (next == b) return;
        resume(me, s * 32 + next);
        return;
      }
      sg_ready &= ~(1u << s);
      if (at_simd[s]) {  // the whole simdgroup is blocked: its collectives complete
        release_collectives(s);
        if ((ready[s] >> b) & 1u) return;  // `me` completed one: it goes on without a switch
        continue;
      }
      if (sg_ready) {
        const uint32_t above = s == 31 ? 0u : sg_ready & (~0u << (s + 1));
        const uint32_t t = uint32_t(__builtin_ctz(above ? above : sg_ready));
        resume(me, t * 32 + uint32_t(__builtin_ctz(ready[t])));
        return;
      }
      // No simdgroup can run: every live lane waits at threadgroup_barrier, or all have exited.
      if (barrier_count == 0 || exited > 0) {
        end = barrier_count == 0 ? GroupEnd::kDone : GroupEnd::kPartialBarrier;
        // Exited lanes stay parked here and run the next threadgroup when resumed; after a
        // partial barrier the lanes are abandoned (parked = 0) and never resumed.
        fiber_switch(me->ctx, main);
        return;
      }
      for (uint32_t t = 0; t < nsg; ++t) {
        ready[t] = at_barrier[t];
        at_barrier[t] = 0;
        if (ready[t]) sg_ready |= 1u << t;
      }
      barrier_count = 0;
      if (race) ++race->epoch;  // checked mode: a new barrier interval
      if ((ready[s] >> b) & 1u) return;
    }
  }
};

// One Worker per OS thread that runs kernels, freed (stacks unmapped) when the thread exits.
struct WorkerHolder {
  Worker *w = nullptr;
  ~WorkerHolder() { delete w; }
};
thread_local WorkerHolder t_worker;

Worker &this_worker() {
  if (!t_worker.w) t_worker.w = new Worker();
  return *t_worker.w;
}

std::atomic<uint64_t> g_dispatch_serial{0};
std::atomic<uint32_t> g_run_serial{0};  // threadgroup runs (race records of threadgroup memory)

struct DispatchState {
  const uint64_t serial = g_dispatch_serial.fetch_add(1) + 1;  // never 0
  const mgsim_dispatch *d = nullptr;
  const abi::kernel_desc *kd = nullptr;
  const char *name = "";
  abi::launch L{};
  abi::check_binding checks[abi::kMaxBindings]{};
  // Checked mode: which bytes of each must-write buffer the kernel wrote (1 per byte, mapped).
  uint8_t *shadows[abi::kMaxBindings]{};
  size_t shadow_bytes[abi::kMaxBindings]{};
  uint32_t groups[3]{};
  uint64_t total_groups = 0;
  uint64_t tg_offset[abi::kMaxBindings]{};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string error;
  std::vector<std::string> violations;
  uint64_t violation_count = 0;
  bool tolerate_oob_reads = false;  // the library's choice: out-of-bounds reads give 0 silently
  // Checked mode: race records of the bound buffers (8 bytes per granule, from CheckMemory).
  uint64_t *race_shadow[abi::kMaxBindings]{};
  // Checked mode: the threadgroup ids of this dispatch's records and its must-write shadow mark
  // (CheckMemory::begin).
  uint32_t group_lo = 0, group_n = 0;
  uint8_t shadow_mark = 1;
  // Read-only buffers: their length until written through anyway (check_binding::unwritten_len).
  uint64_t unwritten_len[abi::kMaxBindings]{};
  size_t race_shadow_bytes[abi::kMaxBindings]{};
  std::vector<std::string> races;        // reports, at most kMaxReportedViolations
  uint64_t race_count = 0;
  std::set<std::string> race_keys;       // (memory, kind) already reported
  // The fault records of the threads that run this dispatch (the watchdog interrupts them).
  std::vector<FaultRecord *> records;

  void fail(const std::string &msg) {
    std::lock_guard<std::mutex> g(mu);
    if (error.empty()) error = msg;
    failed.store(true);
  }
};

std::string pos_string(const uint32_t *p) {
  if (p[0] == 0xffffffffu) return "(unknown)";
  std::ostringstream s;
  s << "(" << p[0] << ", " << p[1] << ", " << p[2] << ")";
  return s.str();
}

void host_block(abi::lane *ln, uint32_t kind, uint64_t token) {
  LaneHost *h = static_cast<LaneHost *>(ln->host);
  Worker &w = *h->worker;
  const uint32_t i = ln->a.index, s = i >> 5, bit = 1u << (i & 31u);
  w.tls_lane_slot = ln->tls_lane_slot;
  w.tls_attrs_slot = ln->tls_attrs_slot;
  const uint32_t ready = w.ready[s] & ~bit;
  w.ready[s] = ready;
  if (kind == abi::block_barrier) {
    w.at_barrier[s] |= bit;
    ++w.barrier_count;
  } else {
    w.at_simd[s] |= bit;
    h->token = token;
  }
  // The common case, kept free of callee-saved registers (so of stack traffic beyond the switch's
  // own): hand over to the next ready lane of the simdgroup.
  if (__builtin_expect(ready != 0, 1)) {
    const uint32_t above = ready & ((~0u << (i & 31u)) << 1);
    w.resume(h, (s << 5) | uint32_t(__builtin_ctz(above ? above : ready)));
    return;
  }
  w.schedule(h, i);
}

// Host code called from kernel code: a fault in it is the simulator's bug, not the kernel's, and
// must not be recovered from (it may hold a lock).
struct Unguarded {
  FaultRecord *rec = this_worker().rec;
  sig_atomic_t was = rec ? rec->active : 0;
  Unguarded() {
    if (rec) rec->active = 0;
  }
  ~Unguarded() {
    if (!rec) return;
    // The watchdog may have tried to stop this thread while it ran here: stop on the way back
    // into kernel code (the locals above are gone by now; the caller is kernel code).
    const uint64_t serial = rec->dispatch_serial.load(std::memory_order_relaxed);
    if (was && serial != 0 && rec->cancel_serial.load(std::memory_order_relaxed) == serial) {
      rec->signo = cancel_signal();
      rec->code = 0;
      rec->address = nullptr;
      rec->position_known = false;
      siglongjmp(rec->jump, 1);
    }
    rec->active = was;
  }
};

void host_misuse(const abi::launch *L, const char *what) {
  Unguarded unguarded;
  auto *d = static_cast<DispatchState *>(L->dispatch);
  d->fail(std::string("kernel '") + d->name + "' called " + what +
          " outside a cooperative lane (the simulator classified it as barrier-free; call it "
          "directly rather than through a function pointer)");
}

// Checked mode's must-write check: the bytes in [from, to) of a buffer never written (`from` a
// multiple of 32), and the first of them. A byte was written when its shadow byte is the
// dispatch's mark or its granule's race record (`rec`, granules of 1 << GS bytes; null when not
// tracked) holds this dispatch's write of the whole granule (a threadgroup id >= lo: see
// mgsim_exec.h record_current): the kernel's fast path (check_elem) marks such writes in the
// record only.
template <uint32_t GS>
uint64_t unwritten_bytes_in(const uint8_t *sh, uint8_t mark, uint64_t from, uint64_t to, const uint64_t *rec,
                            uint32_t lo, uint64_t &first) {
  constexpr uint64_t kGran = uint64_t(1) << GS, kFull = (uint64_t(2) << (kGran - 1)) - 1;
  const uint64_t marks = 0x0101010101010101ull * mark;
  auto written = [&](uint64_t e) { return (e & 0xffffffu) >= lo && (e >> 60) == kFull; };
  uint64_t count = 0;
  auto bytes = [&](uint64_t a, uint64_t b) {
    for (uint64_t i = a; i < b; ++i)
      if (sh[i] != mark && !(rec && written(rec[i >> GS]))) {
        if (first == UINT64_MAX) first = i;
        ++count;
      }
  };
  // Blocks of 32 bytes: written when all their granules' records say so, or all their shadow
  // bytes are the mark. The records with adds and logic only (SSE2): the AND of the records has
  // every bytes bit, the OR of (id - lo) no sign bit (no id below lo). Runs of 256 bytes are tried
  // first (one reduction and branch for 8 blocks); a run that fails is taken block by block. With
  // intrinsics and two accumulators in registers (a 4-wide vector type kept them on the stack):
  // the scan of a fast-path float output went 6.2 -> ~2 instructions per element.
#if defined(__SSE2__)
  const __m128i vlo = _mm_set1_epi64x(int64_t(lo)), vid = _mm_set1_epi64x(0xffffff);
  auto records_written = [&](uint64_t i, uint64_t len) {
    const uint64_t *r = rec + (i >> GS);
    __m128i all0 = _mm_set1_epi64x(-1), all1 = all0, below0 = _mm_setzero_si128(), below1 = below0;
    for (uint64_t j = 0; j < (len >> GS); j += 4) {
      const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(r + j));
      const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(r + j + 2));
      all0 = _mm_and_si128(all0, v0);
      all1 = _mm_and_si128(all1, v1);
      below0 = _mm_or_si128(below0, _mm_sub_epi64(_mm_and_si128(v0, vid), vlo));
      below1 = _mm_or_si128(below1, _mm_sub_epi64(_mm_and_si128(v1, vid), vlo));
    }
    uint64_t a[2], b[2];
    _mm_storeu_si128(reinterpret_cast<__m128i *>(a), _mm_and_si128(all0, all1));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(b), _mm_or_si128(below0, below1));
    return ((a[0] & a[1]) >> 60) == kFull && !((b[0] | b[1]) >> 63);
  };
#else
  auto records_written = [&](uint64_t i, uint64_t len) {
    const uint64_t *r = rec + (i >> GS);
    uint64_t all = ~0ull, below = 0;
    for (uint64_t j = 0; j < (len >> GS); ++j) {
      all &= r[j];
      below |= (r[j] & 0xffffffu) - lo;
    }
    return (all >> 60) == kFull && !(below >> 63);
  };
#endif
  auto block = [&](uint64_t i) {
    if (rec && records_written(i, 32)) return;
    uint64_t w[4];
    memcpy(w, sh + i, 32);
    if (((w[0] ^ marks) | (w[1] ^ marks) | (w[2] ^ marks) | (w[3] ^ marks)) == 0) return;
    bytes(i, i + 32);
  };
  constexpr uint64_t kRun = 256;
  const uint64_t blocks_end = from + (to - from) / 32 * 32;
  uint64_t i = from;
  if (rec) {
    for (; i + kRun <= blocks_end; i += kRun) {
      if (records_written(i, kRun)) continue;
      for (uint64_t k = i; k < i + kRun; k += 32) block(k);
    }
  }
  for (; i < blocks_end; i += 32) block(i);
  bytes(blocks_end, to);
  return count;
}

uint64_t unwritten_bytes(const uint8_t *sh, uint8_t mark, uint64_t from, uint64_t to, const uint64_t *rec, uint32_t gs,
                         uint32_t lo, uint64_t &first) {
  if (gs == 2) return unwritten_bytes_in<2>(sh, mark, from, to, rec, lo, first);
  if (gs == 1) return unwritten_bytes_in<1>(sh, mark, from, to, rec, lo, first);
  return unwritten_bytes_in<0>(sh, mark, from, to, rec, lo, first);
}

thread_local DispatchState *t_dispatch = nullptr;  // the dispatch this thread runs (race reports)
extern const abi::host_api g_host;

void host_violation(const abi::check_binding *b, int64_t off, uint32_t size, int write, const uint32_t *pos) {
  Unguarded unguarded;
  auto *d = b->dispatch ? static_cast<DispatchState *>(b->dispatch) : t_dispatch;
  if (!d) return;
  if (!write && d->tolerate_oob_reads) return;  // the read already gave 0
  std::lock_guard<std::mutex> g(d->mu);
  d->violation_count++;
  if (d->violations.size() >= kMaxReportedViolations) return;
  uint32_t es = b->elem_size ? b->elem_size : 1;
  std::ostringstream s;
  std::string mem = "buffer(" + std::to_string(b->index) + ")";
  if (b->kind == 1) mem = "threadgroup(" + std::to_string(b->index) + ") memory";
  if (b->kind == 2) mem = std::string("threadgroup variable '") + (b->name ? b->name : "?") + "'";
  s << "out-of-bounds " << (write ? "write" : "read") << " in kernel '" << d->name << "': " << mem << " element " << (off >= 0 ? off / int64_t(es) : -((-off + es - 1) / int64_t(es)))
    << " (byte offset " << off << ", " << size << " bytes; the binding has " << b->length
    << " bytes) by thread " << pos_string(pos);
  d->violations.push_back(s.str());
}


// The grid position of thread `lane` of threadgroup `linear` (reports).
std::string thread_at(const DispatchState &ds, uint64_t linear, uint32_t lane) {
  const mgsim_dispatch &d = *ds.d;
  uint32_t id[3], size[3];
  id[0] = uint32_t(linear % ds.groups[0]);
  id[1] = uint32_t((linear / ds.groups[0]) % ds.groups[1]);
  id[2] = uint32_t(linear / (uint64_t(ds.groups[0]) * ds.groups[1]));
  for (int k = 0; k < 3; ++k) {
    const uint32_t tg = d.threads_per_threadgroup[k];
    size[k] = d.dispatch_threads ? uint32_t(std::min<uint64_t>(tg, d.grid[k] - uint64_t(id[k]) * tg)) : tg;
  }
  const uint32_t local[3] = {lane % size[0], (lane / size[0]) % size[1], lane / (size[0] * size[1])};
  uint32_t pos[3];
  for (int k = 0; k < 3; ++k) pos[k] = id[k] * d.threads_per_threadgroup[k] + local[k];
  return pos_string(pos);
}

void host_race(const abi::check_binding *b, int64_t off, uint32_t size, uint32_t kind, uint32_t other_lane,
               uint32_t other_group, uint32_t other_line, uint32_t line, const uint32_t *pos) {
  Unguarded unguarded;
  DispatchState *d = t_dispatch;
  if (!d) return;
  std::string mem;
  if (b->kind == 0) mem = "buffer(" + std::to_string(b->index) + ")";
  else if (b->kind == 1) mem = "threadgroup(" + std::to_string(b->index) + ") memory";
  else mem = std::string("threadgroup variable '") + (b->name ? b->name : "?") + "'";
  std::lock_guard<std::mutex> g(d->mu);
  d->race_count++;
  d->failed.store(true);
  const std::string key = mem + "/" + std::to_string(kind);
  if (d->races.size() >= kMaxReportedViolations || !d->race_keys.insert(key).second) return;
  const uint64_t group = other_group ? uint32_t(other_group - d->group_lo) & 0xffffffu : 0;
  auto at = [](uint32_t l) { return l ? " at line " + std::to_string(l) : std::string(" (line unknown)"); };
  const std::string me = "thread " + pos_string(pos) + at(line);
  const std::string other = other_lane == 0xffffu ? "other threads" : "thread " + thread_at(*d, group, other_lane) + at(other_line);
  std::ostringstream m;
  const uint64_t elem = size ? uint64_t(off) / size : uint64_t(off);
  const char *what = kind == abi::race_uninit ? "uninitialised read" : "race";
  m << what << " in kernel '" << d->name << "': " << mem << " element " << elem << " (byte offset " << off << ", "
    << size << " bytes): ";
  switch (kind) {
    case abi::race_raw:
      m << me << " reads it while " << other << " writes it, with no barrier between (read-after-write)";
      break;
    case abi::race_waw:
      m << me << " and " << other << " both write it, with no barrier between (write-after-write)";
      break;
    case abi::race_war:
      m << me << " writes it while " << other << " reads it, with no barrier between (write-after-read)";
      break;
    case abi::race_uninit:
      m << me << " reads it before any thread of its threadgroup wrote it";
      break;
    case abi::race_cross_waw:
      m << me << " and " << other << " of another threadgroup both write it in one dispatch (threadgroups run in "
        << "any order; use atomics or separate dispatches)";
      break;
    default:
      m << me << " reads it while " << other << " of another threadgroup writes it in one dispatch (threadgroups run "
        << "in any order)";
      break;
  }
  d->races.push_back(m.str());
}

// A threadgroup variable met for the first time on this thread: its race records.
void host_tg_register(abi::check_binding *b) {
  Unguarded unguarded;
  Worker &w = this_worker();
  w.tg_var_shadows.emplace_back(new abi::tg_shadow[b->length ? b->length : 1]());
  b->tg = w.tg_var_shadows.back().get();
  b->rs = &w.race_run;
  b->host = &g_host;
  b->dispatch = nullptr;
  b->index = 0;
  b->elem_size = 0;
  b->shadow = nullptr;
  b->race = nullptr;
}

// Work-item mode: a barrier some of the group's threads did not reach, as fiber mode reports it.
void host_wi_barrier_error(abi::wi_ctx *c, uint32_t reached, uint32_t exited) {
  Unguarded unguarded;
  auto *d = static_cast<DispatchState *>(c->L->dispatch);
  const abi::group &G = *c->G;
  std::ostringstream m;
  m << "threadgroup_barrier reached by " << reached << " of " << c->n << " threads in kernel '" << d->name
    << "', threadgroup (" << G.id[0] << ", " << G.id[1] << ", " << G.id[2] << "): ";
  if (reached + exited == c->n) m << exited << " thread(s) exited without reaching it";
  else m << c->n - reached - exited << " thread(s) are in divergent control flow" << (exited ? " and " : "")
         << (exited ? std::to_string(exited) + " exited" : std::string()) << " (a barrier must be reached by every thread)";
  d->fail(m.str());
}

void host_wi_exhausted(abi::wi_ctx *c, uint64_t need) {
  Unguarded unguarded;
  auto *d = static_cast<DispatchState *>(c->L->dispatch);
  if (c->lane_bytes > c->lane_limit) {
    // A thread's values that live across barriers exceed what a fiber lane's stack would hold.
    const abi::thread_attrs &a = c->attrs[0];
    std::ostringstream m;
    m << "kernel '" << d->name << "': stack overflow in a lane of kernel " << d->name << " (thread position ("
      << a.grid[0] << ", " << a.grid[1] << ", " << a.grid[2] << "); MG_SIM_STACK_KB raises the " << c->lane_limit / 1024
      << " KiB limit: each thread keeps " << c->lane_bytes / 1024 << " KiB live across its barriers)";
    d->fail(m.str());
    return;
  }
  d->fail(std::string("kernel '") + d->name + "': per-lane storage of the work-item form is exhausted (" +
          std::to_string(c->arena_cap >> 20) + " MiB per worker; " + std::to_string(need) +
          " more bytes wanted): too many values live across barriers in one threadgroup");
}

const abi::host_api g_host = {abi::kVersion, &host_block, &host_wi_barrier_error, &host_wi_exhausted, &host_race,
                              &host_tg_register, &host_misuse, &host_violation};

// A lane's fiber runs the kernel once per threadgroup: after exiting it parks in schedule(), and
// resuming it starts the lane of the next threadgroup (no new context per thread).
void lane_entry(void *arg) {
  LaneHost *h = static_cast<LaneHost *>(arg);
  Worker &w = *h->worker;
  const uint32_t i = h->ln->a.index, s = i >> 5, bit = 1u << (i & 31u);
  for (;;) {
    h->kd->lane_main(h->ln);
    w.ready[s] &= ~bit;
    ++w.exited;
    w.schedule(h, i);
  }
}

void fill_group(const DispatchState &ds, uint64_t linear, abi::group &G, Worker &w) {
  const mgsim_dispatch &d = *ds.d;
  G.id[0] = uint32_t(linear % ds.groups[0]);
  G.id[1] = uint32_t((linear / ds.groups[0]) % ds.groups[1]);
  G.id[2] = uint32_t(linear / (uint64_t(ds.groups[0]) * ds.groups[1]));
  G.nthreads = 1;
  for (int k = 0; k < 3; ++k) {
    uint32_t tg = d.threads_per_threadgroup[k];
    if (d.dispatch_threads) {
      uint64_t start = uint64_t(G.id[k]) * tg;
      G.size[k] = uint32_t(std::min<uint64_t>(tg, d.grid[k] - start));
    } else {
      G.size[k] = tg;
    }
    G.nthreads *= G.size[k];
  }
  for (uint32_t n = 0; n < abi::kMaxBindings; ++n)
    G.tg_mem[n] = d.threadgroup_memory_length[n] ? w.tg_mem + ds.tg_offset[n] : nullptr;
  for (int k = 0; k < 3; ++k) {
    G.from[k] = 0;
    G.to[k] = G.size[k];
  }
  G.race = nullptr;
  G.tg_checks = nullptr;
  G.checks = nullptr;
  if (ds.L.checks) {
    // Checked mode: a new run in race detection's records (device records name threadgroups by
    // the dispatch's ids, group_lo + linear index; beyond group_n device memory is not tracked).
    abi::race_state &r = w.race_run;
    r.group = linear < ds.group_n ? ds.group_lo + uint32_t(linear) : 0u;
    r.group_lo = ds.group_lo;
    r.run = g_run_serial.fetch_add(1) + 1;
    if (r.run == 0) r.run = g_run_serial.fetch_add(1) + 1;
    r.epoch = 0;
    for (uint32_t &e : r.simd_epoch) e = 0;
    r.attrs_slot = nullptr;
    r.who = 0;  // set per thread by plain loops (mgsim_exec.h run_group_plain)
    G.race = &r;
    if (w.checks_for != ds.serial) {
      for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
        w.checks[n] = ds.checks[n];
        w.checks[n].rs = &r;
      }
      w.checks_for = ds.serial;
    }
    G.checks = w.checks;
    // The threadgroup(n) blocks' bindings depend on the dispatch and this worker only: set once.
    if (w.tg_checks_for != ds.serial) {
      if (w.tg_mem_shadow.size() < sizeof(w.tg_mem)) w.tg_mem_shadow.resize(sizeof(w.tg_mem));
      for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
        abi::check_binding &c = w.tg_checks[n];
        c = abi::check_binding{};
        if (!d.threadgroup_memory_length[n]) continue;
        c.base = static_cast<char *>(G.tg_mem[n]);
        c.length = d.threadgroup_memory_length[n];
        c.index = n;
        c.host = &g_host;
        c.tg = w.tg_mem_shadow.data() + ds.tg_offset[n];
        c.rs = &r;
        const uint32_t es = ds.kd->tg_elem_size[n];
        c.granule_shift = es >= 4 ? 2u : es == 2 ? 1u : 0u;
        c.kind = 1;
      }
      w.tg_checks_for = ds.serial;
    }
    G.tg_checks = w.tg_checks;
  }
}

// Runs one threadgroup's lanes as fibers until all exit; false (with ds.fail) on a barrier error.
bool run_group_fibers(DispatchState &ds, Worker &w, const abi::group &G) {
  const uint32_t n = G.nthreads;
  std::string err;
  if (!w.ensure_lanes(n, err)) {
    ds.fail(err);
    return false;
  }
  const uint32_t sx = G.size[0], sy = G.size[1], sz = G.size[2];
  const uint32_t *tg = ds.L.threads_per_threadgroup;
  // What does not change between the threadgroups of one shape in one dispatch is set once.
  if (w.shaped_for != ds.serial || w.shape[0] != sx || w.shape[1] != sy || w.shape[2] != sz) {
    for (uint32_t i = 0; i < n; ++i) {
      abi::lane &ln = w.lanes[i];
      abi::thread_attrs &a = ln.a;
      a.local[0] = i % sx;
      a.local[1] = (i / sx) % sy;
      a.local[2] = i / (sx * sy);
      a.index = i;
      a.lane_id = i & 31u;
      a.simd_id = i >> 5;
      ln.L = &ds.L;
      ln.simd_base = &w.lanes[i & ~31u];
      LaneHost &h = w.hosts[i];
      h.ln = &ln;
      h.worker = &w;
      h.kd = ds.kd;
      ln.host = &h;
    }
    w.shaped_for = ds.serial;
    w.shape[0] = sx;
    w.shape[1] = sy;
    w.shape[2] = sz;
  }
  const uint32_t bx = G.id[0] * tg[0], by = G.id[1] * tg[1], bz = G.id[2] * tg[2];
  for (uint32_t i = 0; i < n; ++i) {
    abi::lane &ln = w.lanes[i];
    ln.a.grid[0] = bx + ln.a.local[0];
    ln.a.grid[1] = by + ln.a.local[1];
    ln.a.grid[2] = bz + ln.a.local[2];
    ln.G = &G;
  }
  // Lanes past `parked` have no context yet (or were abandoned): start them at lane_entry.
  // Stagger stack tops so 32 lanes' hot frames do not all map to the same cache sets.
  for (uint32_t i = w.parked; i < n; ++i)
    fiber_init(w.hosts[i].ctx, w.stacks[i], w.stack_size - (i % 32) * 192, &lane_entry, &w.hosts[i]);
  w.parked = std::max(w.parked, n);
  w.nsg = (n + 31) / 32;
  for (uint32_t s = 0; s < w.nsg; ++s) {
    const uint32_t lanes_here = std::min(32u, n - s * 32);
    w.ready[s] = lanes_here == 32 ? ~0u : (1u << lanes_here) - 1;
    w.at_simd[s] = w.at_barrier[s] = 0;
  }
  w.sg_ready = w.nsg == 32 ? ~0u : (1u << w.nsg) - 1;
  w.exited = 0;
  w.barrier_count = 0;
  w.end = GroupEnd::kDone;
  w.race = G.race;
  w.tls_lane_slot = nullptr;
  w.tls_attrs_slot = nullptr;
  w.resume(nullptr, 0);
  *w.current = nullptr;
  if (w.end == GroupEnd::kDone) return true;
  w.parked = 0;  // lanes blocked at the barrier are abandoned mid-kernel
  std::ostringstream m;
  m << "threadgroup_barrier reached by " << w.barrier_count << " of " << n << " threads in kernel '" << ds.name
    << "', threadgroup (" << G.id[0] << ", " << G.id[1] << ", " << G.id[2] << "): " << w.exited
    << " thread(s) exited without reaching it";
  ds.fail(m.str());
  return false;
}

constexpr size_t kWorkItemArena = size_t(1) << 30;  // address space per worker, touched as used

// A fiber lane's stack (MG_SIM_STACK_KB, default 256 KiB): in work-item mode, the most one thread
// may keep live across its barriers, so both modes accept the same kernels.
size_t lane_stack_bytes() {
  static const size_t bytes = [] {
    size_t kb = 256;
    if (const char *e = getenv("MG_SIM_STACK_KB")) {
      long v = atol(e);
      if (v >= 16 && v <= 65536) kb = size_t(v);
    }
    return kb * 1024;
  }();
  return bytes;
}

// Runs one threadgroup in work-item mode: one call of the kernel's work-item entry.
void run_group_wi(DispatchState &ds, Worker &w, const abi::group &G) {
  const uint32_t n = G.nthreads;
  if (!w.wi_arena) {
    void *p = mmap(nullptr, kWorkItemArena, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      ds.fail("cannot reserve per-lane storage for the work-item form");
      return;
    }
    w.wi_arena = static_cast<char *>(p);
    w.wi_arena_cap = kWorkItemArena;
    w.wi_attrs.resize(kMaxLanes);
  }
  const uint32_t sx = G.size[0], sy = G.size[1], sz = G.size[2];
  if (w.wi_shaped_for != ds.serial || w.wi_shape[0] != sx || w.wi_shape[1] != sy || w.wi_shape[2] != sz) {
    for (uint32_t i = 0; i < n; ++i) {
      abi::thread_attrs &a = w.wi_attrs[i];
      a.local[0] = i % sx;
      a.local[1] = (i / sx) % sy;
      a.local[2] = i / (sx * sy);
      a.index = i;
      a.lane_id = i & 31u;
      a.simd_id = i >> 5;
    }
    w.wi_shaped_for = ds.serial;
    w.wi_shape[0] = sx;
    w.wi_shape[1] = sy;
    w.wi_shape[2] = sz;
  }
  const uint32_t *tg = ds.L.threads_per_threadgroup;
  const uint32_t bx = G.id[0] * tg[0], by = G.id[1] * tg[1], bz = G.id[2] * tg[2];
  for (uint32_t i = 0; i < n; ++i) {
    abi::thread_attrs &a = w.wi_attrs[i];
    a.grid[0] = bx + a.local[0];
    a.grid[1] = by + a.local[1];
    a.grid[2] = bz + a.local[2];
  }
  abi::wi_ctx &c = w.wc;
  c.n = n;
  c.nsg = (n + 31) / 32;
  for (uint32_t s = 0; s < c.nsg; ++s) {
    const uint32_t lanes_here = std::min(32u, n - s * 32);
    c.active[s] = c.alive[s] = lanes_here == 32 ? ~0u : (1u << lanes_here) - 1;
  }
  c.depth = 0;
  c.failed = 0;
  c.cur = 0;
  c.track = 0;
  c.arena = w.wi_arena;
  c.arena_cap = w.wi_arena_cap;
  c.arena_top = 0;
  c.lane_bytes = 0;
  c.lane_limit = lane_stack_bytes();
  c.L = &ds.L;
  c.G = &G;
  c.attrs = w.wi_attrs.data();
  c.tls_attrs = nullptr;
  c.loop = c.fn = nullptr;
  ds.kd->wi(&ds.L, &G, &c);
}

void run_group(DispatchState &ds, Worker &w, uint64_t linear) {
  abi::group G;
  w.group_linear = linear;
  fill_group(ds, linear, G, w);
  if (ds.kd->wi) run_group_wi(ds, w, G);
  else if (ds.kd->needs_fibers) run_group_fibers(ds, w, G);
  else ds.kd->plain(&ds.L, &G);
}

// A plain loop does not say which thread it runs (tracking it would slow every kernel): after a
// fault, the threadgroup's threads run again one at a time until one faults again. The dispatch
// has failed already, so repeating side effects changes nothing that counts.
void locate_plain_fault(DispatchState &ds, Worker &w, FaultRecord &rec) {
  const int signo = rec.signo, code = rec.code;
  void *const address = rec.address;
  abi::group G;
  fill_group(ds, w.group_linear, G, w);
  abi::thread_attrs probe{};
  // A thread re-run here may loop forever (another thread did): the watchdog may stop the search.
  rec.dispatch_serial.store(ds.serial, std::memory_order_relaxed);
  if (sigsetjmp(rec.jump, 0) == 0) {
    rec.current = &probe;  // the handler copies the position of the thread that faults
    rec.active = 1;
    const uint32_t *tg = ds.L.threads_per_threadgroup;
    for (uint32_t i = 0; i < G.nthreads; ++i) {
      const uint32_t x = i % G.size[0], y = (i / G.size[0]) % G.size[1], z = i / (G.size[0] * G.size[1]);
      probe.grid[0] = G.id[0] * tg[0] + x;
      probe.grid[1] = G.id[1] * tg[1] + y;
      probe.grid[2] = G.id[2] * tg[2] + z;
      G.from[0] = x;
      G.from[1] = y;
      G.from[2] = z;
      G.to[0] = x + 1;
      G.to[1] = y + 1;
      G.to[2] = z + 1;
      ds.kd->plain(&ds.L, &G);
    }
    rec.active = 0;  // no thread faulted this time: the position stays unknown
  } else {
    unblock_fault_signal(rec);
    if (rec.signo == cancel_signal()) rec.position_known = false;  // stopped, not the faulting thread
  }
  rec.dispatch_serial.store(0, std::memory_order_relaxed);
  rec.current = nullptr;
  rec.signo = signo;
  rec.code = code;
  rec.address = address;
}

// --- watchdog ---------------------------------------------------------------------------------
//
// A GPU faults a command buffer that runs too long; here a dispatch that runs longer than
// MG_SIM_TIMEOUT_MS (default 60 s, 0 disables) fails naming its kernel. Kernel code cannot be
// asked to stop (an endless loop checks nothing), so the watchdog thread sends the threads running
// it a signal whose handler siglongjmps out of the kernel code, as fault recovery does: they stop,
// write nothing more, and run the next dispatch normally. A thread in the simulator's own code
// (Unguarded) ignores the signal and is interrupted again on the next round.

constexpr int64_t kDefaultTimeoutMs = 60000;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t timeout_ms() {
  const char *e = getenv("MG_SIM_TIMEOUT_MS");
  if (!e || !*e) return kDefaultTimeoutMs;
  char *end = nullptr;
  const long long v = strtoll(e, &end, 10);
  if (!end || *end != '\0' || v < 0) return kDefaultTimeoutMs;
  return int64_t(v);
}

struct Watch {
  DispatchState *ds;
  int64_t timeout;
  int64_t deadline;
  bool fired = false;
};
struct Watchdog {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Watch *> watches;
  int64_t wake = INT64_MAX;  // when the watchdog looks next (under mu)
};
// Never destroyed: its thread waits on it through static destruction (a condition variable
// destroyed under a waiter blocks exit).
Watchdog &watchdog() {
  static Watchdog *w = new Watchdog();
  return *w;
}

// Sleeps until the earliest deadline; a dispatch past its deadline fails, and its threads are
// interrupted every 50 ms until they have all left its kernel code.
void watchdog_loop() {
  Watchdog &wd = watchdog();
  std::unique_lock<std::mutex> lock(wd.mu);
  for (;;) {
    int64_t now = now_ms();
    int64_t wake = now + 1000;
    for (const Watch *w : wd.watches) wake = std::min(wake, w->fired ? now + 50 : w->deadline);
    wd.wake = wake;
    wd.cv.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::milliseconds(wake)));
    now = now_ms();
    for (Watch *w : wd.watches) {
      if (now < w->deadline) continue;
      DispatchState &ds = *w->ds;
      if (!w->fired) {
        w->fired = true;
        ds.fail(std::string("kernel '") + ds.name + "': the dispatch ran longer than " + std::to_string(w->timeout) +
                " ms (MG_SIM_TIMEOUT_MS) and was stopped, as a GPU faults a command buffer that runs too long "
                "(an endless loop?)");
      }
      std::vector<FaultRecord *> records;
      {
        std::lock_guard<std::mutex> dg(ds.mu);
        records = ds.records;
      }
      for (FaultRecord *r : records) {
        r->cancel_serial.store(ds.serial, std::memory_order_relaxed);
        if (r->dispatch_serial.load(std::memory_order_relaxed) == ds.serial) interrupt_thread(r->tid.load());
      }
    }
  }
}

// Registers a dispatch with the watchdog for as long as it runs.
struct WatchGuard {
  Watch w;
  bool on = false;
  WatchGuard(DispatchState &ds, int64_t timeout) : w{&ds, timeout, 0} {
    if (timeout <= 0 || cancel_signal() <= 0) return;
    static std::once_flag started;
    std::call_once(started, [] { std::thread(&watchdog_loop).detach(); });
    w.deadline = now_ms() + timeout;
    Watchdog &wd = watchdog();
    std::lock_guard<std::mutex> g(wd.mu);
    wd.watches.push_back(&w);
    on = true;
    if (w.deadline < wd.wake) wd.cv.notify_one();  // rare: only a short limit is sooner
  }
  ~WatchGuard() {
    if (!on) return;
    Watchdog &wd = watchdog();
    std::lock_guard<std::mutex> g(wd.mu);
    wd.watches.erase(std::find(wd.watches.begin(), wd.watches.end(), &w));
  }
};

// A small pool: the dispatching thread works too. One dispatch uses the pool at a time; a
// concurrent dispatch from another thread runs on its own thread instead of waiting.
//
// A job waits only for the workers that joined it: the dispatching thread closes it once it has
// claimed the last of the work, and a worker that wakes after that (its CPU busy with other
// processes) skips it, instead of the dispatch waiting for that CPU.
//
// Placement. With no idle CPU, Linux wakes a worker on the CPU of the thread that woke it, behind
// that thread, which is busy running the same job: the pool runs serially, and as each wake
// repeats the choice, for the rest of the process (cumsum rows 1024^2 1.3 or 2.3 ms by process).
// So the workers' affinity excludes the dispatching thread's CPU (set again when that CPU changes).
// On a saturated machine that backfires: a worker that joins on the other CPU is preempted there
// while holding work, and the dispatch waits for its next time slice (ms). A job whose workers
// finished more than its own share's time after the dispatching thread (a stall) counts: two in
// the last eight steered jobs (about where a stall's few ms outweigh what the others gained), and
// placement is left to the kernel for a second before steering is tried again. MG_SIM_STEER=0:
// never steer.
class Pool {
 public:
  static Pool &get() {
    static Pool *p = new Pool();  // never destroyed: worker threads outlive static destruction
    return *p;
  }
  unsigned size() const { return unsigned(threads_) + 1; }

  // `job` claims work until there is none left, on every thread that runs it.
  void run(const std::function<void()> &job) {
    std::unique_lock<std::mutex> run_lock(run_mu_, std::try_to_lock);
    if (!run_lock.owns_lock() || threads_ == 0) {
      job();
      return;
    }
    const bool steered = steer();
    {
      std::lock_guard<std::mutex> g(mu_);
      job_ = &job;
      ++generation_;
    }
    cv_.notify_all();
    const auto t0 = std::chrono::steady_clock::now();
    job();
    const auto t1 = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> g(mu_);
    job_ = nullptr;  // no work is left to claim: a worker not yet in the job skips it
    const bool joined = joined_ > 0;
    done_cv_.wait(g, [&] { return joined_ == 0; });
    g.unlock();
    if (steered && joined) judge(t1 - t0, std::chrono::steady_clock::now() - t1);
  }

 private:
  using clock = std::chrono::steady_clock;
  Pool() {
    // The CPUs this process may run on (a taskset or cpuset may allow fewer than the machine has).
    unsigned n = std::thread::hardware_concurrency();
    CPU_ZERO(&allowed_);
    if (sched_getaffinity(0, sizeof(allowed_), &allowed_) == 0 && CPU_COUNT(&allowed_) > 0) n = unsigned(CPU_COUNT(&allowed_));
    else CPU_ZERO(&allowed_);
    if (const char *e = getenv("MG_SIM_THREADS")) {
      long v = atol(e);
      if (v >= 1 && v <= 1024) n = unsigned(v);
    }
    if (n == 0) n = 1;
    const char *steer = getenv("MG_SIM_STEER");
    steer_ = CPU_COUNT(&allowed_) >= 2 && !(steer && strcmp(steer, "0") == 0);
    threads_ = int(n) - 1;
    for (int i = 0; i < threads_; ++i) {
      std::thread t([this] { loop(); });
      handles_.push_back(t.native_handle());  // stays valid: the thread never exits
      t.detach();
    }
  }
  // Keeps the workers off the calling (dispatching) thread's CPU, unless backed off; whether it
  // does. Called with run_mu_ held.
  bool steer() {
    if (!steer_) return false;
    if (backed_off_) {
      if (clock::now() < retry_at_) return false;
      backed_off_ = false;
      history_ = 0;
    }
    const int cpu = sched_getcpu();
    if (cpu < 0 || !CPU_ISSET(cpu, &allowed_)) return false;
    if (cpu != steered_from_) {
      cpu_set_t others = allowed_;
      CPU_CLR(cpu, &others);
      set_workers(others);
      steered_from_ = cpu;
      stats().pool_steers.fetch_add(1, std::memory_order_relaxed);
    }
    return true;
  }
  // A steered job the workers joined: the dispatching thread's own part took `own`, then it
  // waited `tail` for the workers.
  void judge(clock::duration own, clock::duration tail) {
    history_ = uint8_t((history_ << 1) | (tail > own ? 1 : 0));
    if (__builtin_popcount(history_) < 2) return;
    backed_off_ = true;
    retry_at_ = clock::now() + std::chrono::seconds(1);
    set_workers(allowed_);
    steered_from_ = -1;
    stats().pool_steer_backoffs.fetch_add(1, std::memory_order_relaxed);
  }
  void set_workers(const cpu_set_t &cpus) {
    for (pthread_t h : handles_) pthread_setaffinity_np(h, sizeof(cpus), &cpus);
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void()> *job;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [&] { return generation_ != seen; });
        seen = generation_;
        job = job_;
        if (!job) continue;  // woke after the job closed
        ++joined_;
      }
      (*job)();
      std::lock_guard<std::mutex> g(mu_);
      if (--joined_ == 0) done_cv_.notify_all();
    }
  }
  int threads_ = 0;
  std::mutex run_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void()> *job_ = nullptr;  // the open job, if any
  int joined_ = 0;                              // workers running it
  uint64_t generation_ = 0;
  // Placement (under run_mu_).
  cpu_set_t allowed_;
  bool steer_ = false;
  int steered_from_ = -1;  // the CPU the workers' affinity excludes now
  uint8_t history_ = 0;    // stalls among the last eight steered jobs the workers joined (bits)
  bool backed_off_ = false;
  clock::time_point retry_at_{};
  std::vector<pthread_t> handles_;
};

// Runs f(begin, end) over [0, size) in pieces of `grain` bytes on the pool (inline when small):
// checked mode's output poisoning and must-write scan, memory-bound passes over whole buffers.
template <class F>
void parallel_ranges(uint64_t size, uint64_t grain, F &&f) {
  Pool &pool = Pool::get();
  if (size <= grain || pool.size() == 1) {
    f(uint64_t(0), size);
    return;
  }
  std::atomic<uint64_t> next{0};
  pool.run(std::function<void()>([&] {
    for (;;) {
      const uint64_t b = next.fetch_add(grain, std::memory_order_relaxed);
      if (b >= size) break;
      f(b, std::min(size, b + grain));
    }
  }));
}

// Checked mode's record memory (race records and must-write shadows), kept across dispatches: a
// fresh mapping per dispatch cost page faults, zeroing and munmap over 3x the output's bytes (add
// 16M: 3.5 s of system time in a bench run vs 0.3 s unchecked, and stalls of 70-140 ms). Nothing
// is cleared between dispatches: race records carry the dispatch's threadgroup ids and shadows its
// mark (mgsim_exec.h), so an earlier dispatch's entries read as "not written". When ids or marks
// run out, the era advances and a mapping written in an earlier era is zeroed (MADV_DONTNEED)
// before its next use. Idle mappings over MG_SIM_CHECK_CACHE_MB (default 1024; 0: unmap after
// every dispatch) are unmapped, oldest first; mgsim_release_check_memory unmaps them all.
class CheckMemory {
 public:
  enum Kind { kRecords = 0, kShadow = 1 };
  struct Block {
    void *p = nullptr;
    size_t bytes = 0;
    uint32_t era = 0;
  };
  static CheckMemory &get() {
    static CheckMemory *c = new CheckMemory();  // never destroyed (dispatches may outlive statics)
    return *c;
  }
  // A dispatch's threadgroup ids for `groups` threadgroups, its shadow mark, and the eras its
  // blocks must be of.
  struct Ids {
    uint32_t lo, n, era[2];
    uint8_t mark;
  };
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mu_); }
  // Under lock(), with the dispatch's take()s: a block then holds records of dispatches that began
  // earlier only, whose ids are all below this one's (record_current's test).
  Ids begin(const std::unique_lock<std::mutex> &, uint64_t groups) {
    // The id space: 24 bits (the record's field) minus 0; MG_SIM_RACE_GROUP_IDS lowers it so that
    // tests can make it wrap around (as MG_SIM_SHADOW_MARKS the marks).
    uint32_t space = (1u << abi::kRaceGroupBits) - 1u;
    if (const char *e = getenv("MG_SIM_RACE_GROUP_IDS")) {
      const long v = atol(e);
      if (v >= 1 && v < long(space)) space = uint32_t(v);
    }
    Ids ids{};
    ids.n = uint32_t(std::min<uint64_t>(groups, space));
    if (uint64_t(next_id_) + ids.n > uint64_t(space) + 1) {
      next_id_ = 1;
      ++era_[kRecords];
      ++stats().check_memory_wraps;
    }
    ids.lo = next_id_;
    next_id_ += ids.n;
    uint32_t marks = 255;  // MG_SIM_SHADOW_MARKS lowers it (tests)
    if (const char *e = getenv("MG_SIM_SHADOW_MARKS")) {
      const long v = atol(e);
      if (v >= 1 && v < 255) marks = uint32_t(v);
    }
    if (next_mark_ > marks) {
      next_mark_ = 1;
      ++era_[kShadow];
      ++stats().check_memory_wraps;
    }
    ids.mark = uint8_t(next_mark_++);
    ids.era[kRecords] = era_[kRecords];
    ids.era[kShadow] = era_[kShadow];
    return ids;
  }
  // A mapping of at least `bytes` holding nothing of era `era` (null if none can be mapped).
  void *take(const std::unique_lock<std::mutex> &, Kind kind, size_t bytes, uint32_t era, Block &out) {
    bytes = round(bytes);
    Block b;
    auto &list = idle_[kind];
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i].bytes >= bytes && (best == SIZE_MAX || list[i].bytes < list[best].bytes)) best = i;
    if (best != SIZE_MAX) {
      b = list[best];
      list.erase(list.begin() + long(best));
      idle_bytes_ -= b.bytes;
    }
    if (b.p) {
      ++stats().check_memory_reuses;
      if (b.era != era) madvise(b.p, b.bytes, MADV_DONTNEED);  // zero: "not written" in any era
    } else {
      void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) return nullptr;
      // Large pages where offered: far fewer page faults over big buffers.
      if (bytes >= (size_t(4) << 20)) madvise(p, bytes, MADV_HUGEPAGE);
      ++stats().check_memory_maps;
      b.p = p;
      b.bytes = bytes;
    }
    b.era = era;
    out = b;
    return b.p;
  }
  void give(Kind kind, const Block &b) {
    if (!b.p) return;
    std::vector<Block> drop;
    {
      std::lock_guard<std::mutex> g(mu_);
      idle_[kind].push_back(b);
      idle_bytes_ += b.bytes;
      // Over the cap (or too many blocks): unmap the oldest idle blocks.
      while (!idle_[0].empty() || !idle_[1].empty()) {
        if (idle_bytes_ <= cap_ && idle_[0].size() + idle_[1].size() <= kMaxIdle) break;
        auto &list = idle_[idle_[kind].empty() ? 1 - kind : kind];
        drop.push_back(list.front());
        idle_bytes_ -= list.front().bytes;
        list.erase(list.begin());
      }
    }
    for (const Block &d : drop) munmap(d.p, d.bytes);
  }
  void release_all() {
    std::vector<Block> drop;
    {
      std::lock_guard<std::mutex> g(mu_);
      for (auto &list : idle_) {
        drop.insert(drop.end(), list.begin(), list.end());
        list.clear();
      }
      idle_bytes_ = 0;
    }
    for (const Block &d : drop) munmap(d.p, d.bytes);
  }

 private:
  static constexpr size_t kMaxIdle = 64;
  CheckMemory() {
    if (const char *e = getenv("MG_SIM_CHECK_CACHE_MB")) cap_ = size_t(std::max(0L, atol(e))) << 20;
  }
  static size_t round(size_t bytes) {
    const size_t page = bytes >= (size_t(4) << 20) ? size_t(2) << 20 : 4096;
    return (bytes + page - 1) / page * page;
  }
  std::mutex mu_;
  std::vector<Block> idle_[2];
  size_t idle_bytes_ = 0;
  size_t cap_ = size_t(1024) << 20;
  uint32_t next_id_ = 1, next_mark_ = 1;
  uint32_t era_[2] = {1, 1};
};

}  // namespace

namespace {

int run_dispatch_in(const mgsim_dispatch &d, Module *module, const abi::kernel_desc *kernel, std::string &error,
                    uint64_t *cpu_ns = nullptr);

uint64_t thread_cpu_ns() {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

}  // namespace

int run_dispatch(const mgsim_dispatch &d, std::string &error) {
  const mgsim_function *fn = d.function;
  if (!fn || !fn->kernel) {
    error = "no function";
    return 1;
  }
  Module *lib_module = fn->library->module.get();
  if (lib_module->tier != 0) return run_dispatch_in(d, lib_module, fn->kernel, error);
  // Tier 0: a promoted kernel runs in its optimised object (found by name at promotion); otherwise
  // the dispatch's CPU time counts towards compiling it optimised. CPU, not wall time: on a loaded
  // machine (CI's test workers outnumber its cores) wall time grew with the load and promoted
  // kernels that a quiet machine would not (a fresh-clone CI under load: 21 promotions, not 11).
  const uint32_t index = uint32_t(fn->kernel - lib_module->desc->kernels);
  Module::KernelTier &kt = lib_module->kernel_tiers[index];
  if (const abi::kernel_desc *k = kt.kernel.load(std::memory_order_acquire)) return run_dispatch_in(d, kt.module, k, error);
  uint64_t cpu_ns = 0;
  const int rc = run_dispatch_in(d, lib_module, fn->kernel, error, &cpu_ns);
  uint64_t bytes = 0;
  for (uint32_t n = 0; n < abi::kMaxBindings; ++n) bytes += d.buffers[n].length;
  tier0_ran(lib_module, index, cpu_ns, bytes);
  return rc;
}

namespace {

int run_dispatch_in(const mgsim_dispatch &d, Module *module, const abi::kernel_desc *kernel, std::string &error,
                    uint64_t *cpu_ns) {
  const mgsim_function *fn = d.function;
  DispatchState ds;
  ds.d = &d;
  ds.kd = kernel;
  ds.name = kernel->name;
  ds.tolerate_oob_reads = fn->library->tolerate_oob_reads;
  const abi::kernel_desc &kd = *ds.kd;
  auto fail = [&](const std::string &m) {
    error = "kernel '" + std::string(ds.name) + "': " + m;
    return 1;
  };
  uint64_t tg_threads = 1;
  for (int k = 0; k < 3; ++k) tg_threads *= d.threads_per_threadgroup[k];
  if (tg_threads == 0) return fail("threads_per_threadgroup has a zero dimension");
  if (tg_threads > kd.max_threads) {
    std::ostringstream m;
    m << "threadgroup of " << d.threads_per_threadgroup[0] << "x" << d.threads_per_threadgroup[1] << "x"
      << d.threads_per_threadgroup[2] << " = " << tg_threads << " threads exceeds the function's maximum of "
      << kd.max_threads;
    return fail(m.str());
  }
  uint64_t dyn = 0;
  for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
    uint64_t len = d.threadgroup_memory_length[n];
    if (len) {
      ds.tg_offset[n] = dyn;
      dyn += (len + 15) & ~uint64_t(15);
    }
    if (((kd.tg_mask >> n) & 1u) && len == 0)
      return fail("threadgroup(" + std::to_string(n) + ") parameter has no threadgroup memory length set");
  }
  if (dyn + kd.static_tg_bytes > kThreadgroupMemoryLimit) {
    std::ostringstream m;
    m << "threadgroup memory of " << dyn + kd.static_tg_bytes << " bytes (" << kd.static_tg_bytes
      << " static + " << dyn << " dynamic) exceeds the limit of " << kThreadgroupMemoryLimit << " bytes";
    return fail(m.str());
  }
  for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
    if (!((kd.buffer_mask >> n) & 1u)) continue;
    if (!d.buffers[n].data) return fail("buffer(" + std::to_string(n) + ") is not bound");
    if (kd.ref_size[n] && d.buffers[n].length && d.buffers[n].length < kd.ref_size[n]) {
      std::ostringstream m;
      m << "buffer(" << n << ") binds " << d.buffers[n].length << " bytes but the kernel reads a "
        << kd.ref_size[n] << "-byte value from it";
      return fail(m.str());
    }
  }
  // Geometry.
  for (int k = 0; k < 3; ++k) {
    uint32_t tg = d.threads_per_threadgroup[k];
    ds.groups[k] = d.dispatch_threads ? uint32_t((uint64_t(d.grid[k]) + tg - 1) / tg) : d.grid[k];
    ds.L.threads_per_threadgroup[k] = tg;
    ds.L.threadgroups_per_grid[k] = ds.groups[k];
    ds.L.threads_per_grid[k] = d.dispatch_threads ? d.grid[k] : uint32_t(uint64_t(d.grid[k]) * tg);
  }
  ds.total_groups = uint64_t(ds.groups[0]) * ds.groups[1] * ds.groups[2];
  ensure_fault_handlers();
  stats().dispatches.fetch_add(1);
  if (kd.needs_fibers) stats().fiber_dispatches.fetch_add(1);
  if (kd.wi || (kd.needs_fibers && !kd.fiber_reason)) stats().workitem_dispatches.fetch_add(1);  // (or its tier-0 stand-in)
  else if (kd.needs_fibers) stats().fiber_fallback_dispatches.fetch_add(1);
  if (kd.needs_fibers && !kd.wi && !kd.fiber_reason) stats().tier0_fiber_dispatches.fetch_add(1);  // counted apart: what ran
  if (ds.total_groups == 0) return 0;

  ds.L.host = &g_host;
  ds.L.dispatch = &ds;
  for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
    ds.L.buffers[n] = d.buffers[n].data;
    ds.L.lengths[n] = d.buffers[n].length;
  }
  const auto *mod = module->desc;
  if (mod->n_fconsts) {
    ds.L.fc_values = fn->fc_values.data();
    ds.L.fc_defined = fn->fc_defined.data();
  }
  // Kernels compiled in checked mode bind checked pointers; the launch then carries the bounds.
  const bool checked = module->checked;
  // Checked mode's records come from CheckMemory and go back to it when the dispatch ends.
  CheckMemory &cm = CheckMemory::get();
  CheckMemory::Ids ids{};
  struct Blocks {
    CheckMemory &cm;
    CheckMemory::Block records[abi::kMaxBindings], shadows[abi::kMaxBindings];
    ~Blocks() {
      for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
        cm.give(CheckMemory::kRecords, records[n]);
        cm.give(CheckMemory::kShadow, shadows[n]);
      }
    }
  } blocks{cm, {}, {}};
  // The ids and the blocks in one critical section (CheckMemory::begin); released before the
  // blocks go back (declared after them).
  std::unique_lock<std::mutex> held;
  if (checked) {
    held = cm.lock();
    ids = cm.begin(held, ds.total_groups);
    ds.group_lo = ids.lo;
    ds.group_n = ids.n;
    ds.shadow_mark = ids.mark;
  }
  uint32_t poison_mask = 0;
  for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
    abi::check_binding &c = ds.checks[n];
    c.base = static_cast<char *>(d.buffers[n].data);
    c.length = d.buffers[n].length;
    c.index = n;
    c.elem_size = kd.elem_size[n];
    c.host = &g_host;
    c.dispatch = &ds;
    c.shadow_mark = ds.shadow_mark;
    if (checked && ((d.must_write_mask >> n) & 1u) && d.buffers[n].data && d.buffers[n].length) {
      void *p = cm.take(held, CheckMemory::kShadow, d.buffers[n].length, ids.era[CheckMemory::kShadow], blocks.shadows[n]);
      if (!p) return fail("checked mode: cannot map the written-bytes record of buffer(" + std::to_string(n) + ")");
      ds.shadows[n] = static_cast<uint8_t *>(p);
      ds.shadow_bytes[n] = d.buffers[n].length;
      c.shadow = ds.shadows[n];
      // Poison: an element the kernel forgets to write reads back as NaN / all-ones. Not when
      // another binding overlaps it (an output computed in place over its input): that would
      // destroy what the kernel reads. On the pool: a memory-bound pass as long as the kernel's.
      const char *lo = static_cast<const char *>(d.buffers[n].data), *hi = lo + d.buffers[n].length;
      bool shared = false;
      for (uint32_t m = 0; m < abi::kMaxBindings && !shared; ++m) {
        const char *mlo = static_cast<const char *>(d.buffers[m].data);
        shared = m != n && mlo && d.buffers[m].length && mlo < hi && lo < mlo + d.buffers[m].length;
      }
      if (!shared) poison_mask |= 1u << n;
    }
  }
  ds.L.checks = checked ? ds.checks : nullptr;
  // Race records for every bound buffer (only the pages of granules written are ever touched).
  if (checked) {
    for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
      if (!d.buffers[n].data || !d.buffers[n].length) continue;
      // One record per element (at most 4 bytes: a wider element is several granules).
      const uint32_t es = kd.elem_size[n];
      const uint32_t shift = es >= 4 ? 2u : es == 2 ? 1u : 0u;
      ds.checks[n].granule_shift = shift;
      const size_t bytes = size_t((d.buffers[n].length + (1u << shift) - 1) >> shift) * sizeof(uint64_t);
      void *p = cm.take(held, CheckMemory::kRecords, bytes, ids.era[CheckMemory::kRecords], blocks.records[n]);
      if (!p) continue;  // not tracked (the report would say nothing anyway)
      ds.race_shadow[n] = static_cast<uint64_t *>(p);
      ds.race_shadow_bytes[n] = bytes;
      ds.checks[n].race = ds.race_shadow[n];
      ds.unwritten_len[n] = d.buffers[n].length;
      ds.checks[n].unwritten_len = ((kd.const_mask >> n) & 1u) ? &ds.unwritten_len[n] : nullptr;
    }
    held.unlock();
  }
  for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
    if (!((poison_mask >> n) & 1u)) continue;
    char *out = static_cast<char *>(d.buffers[n].data);
    parallel_ranges(d.buffers[n].length, uint64_t(1) << 20, [&](uint64_t b, uint64_t e) { memset(out + b, 0xff, e - b); });
  }

  WatchGuard watch(ds, timeout_ms());
  const bool watched = watch.on;
  Pool &pool = Pool::get();
  uint64_t total_threads = ds.total_groups * tg_threads;
  std::atomic<uint64_t> next{0};
  uint64_t chunk = std::max<uint64_t>(1, ds.total_groups / (uint64_t(pool.size()) * 8));
  auto job = [&] {
    Worker &w = this_worker();
    FaultRecord *const rec = w.rec;
    if (rec && sigsetjmp(rec->jump, 0) != 0) {
      // Kernel code faulted on this thread, or the watchdog stopped it (guard.cpp's handlers jumped
      // here): the dispatch fails, and this thread's fibers, abandoned mid-kernel, are never resumed.
      w.parked = 0;
      *w.current = nullptr;
      unblock_fault_signal(*rec);
      rec->dispatch_serial.store(0, std::memory_order_relaxed);
      if (rec->signo == cancel_signal()) return;  // the watchdog set the dispatch's error
      if (ds.kd->wi && w.wc.cur < w.wc.n) {
        // Work-item mode: the lane the per-lane code was running.
        const abi::thread_attrs &a = w.wi_attrs[w.wc.cur];
        for (int k = 0; k < 3; ++k) rec->position[k] = a.grid[k];
        rec->position_known = true;
      } else if (!ds.kd->needs_fibers) {
        locate_plain_fault(ds, w, *rec);
      }
      ds.fail(describe_fault(*rec, ds.name, w.stacks.data(), w.stacks.size(), w.stack_size, w.guard,
                             ds.kd->needs_fibers != 0 && !ds.kd->wi));
      return;
    }
    if (rec && watched) {
      static thread_local bool unblocked = false;  // a thread's signal mask is its creator's
      if (!unblocked) {
        unblock_cancel_signal();
        unblocked = true;
      }
      rec->dispatch_serial.store(ds.serial, std::memory_order_relaxed);
      std::lock_guard<std::mutex> g(ds.mu);
      ds.records.push_back(rec);
    }
    t_dispatch = &ds;
    if (rec) rec->active = 1;
    while (!ds.failed.load(std::memory_order_relaxed)) {
      const uint64_t b = next.fetch_add(chunk);
      if (b >= ds.total_groups) break;
      const uint64_t e = std::min(ds.total_groups, b + chunk);
      for (uint64_t g = b; g < e && !ds.failed.load(std::memory_order_relaxed); ++g) run_group(ds, w, g);
    }
    if (rec) {
      rec->active = 0;
      rec->dispatch_serial.store(0, std::memory_order_relaxed);
    }
  };
  // Small dispatches are not worth waking the pool. With `cpu_ns`, the CPU time of every thread
  // that ran groups is summed into it.
  std::atomic<uint64_t> cpu{0};
  auto timed_job = [&] {
    const uint64_t t0 = thread_cpu_ns();
    job();
    cpu.fetch_add(thread_cpu_ns() - t0, std::memory_order_relaxed);
  };
  if (ds.total_groups == 1 || total_threads < 2048) {
    if (cpu_ns) timed_job();
    else job();
  } else if (cpu_ns) {
    pool.run(std::function<void()>(timed_job));
  } else {
    pool.run(std::function<void()>(job));
  }
  if (cpu_ns) *cpu_ns = cpu.load();

  std::vector<std::string> msgs;
  if (!ds.error.empty()) msgs.push_back(ds.error);
  for (auto &v : ds.violations) msgs.push_back(v);
  for (auto &v : ds.races) msgs.push_back(v);
  if (ds.race_count > ds.races.size())
    msgs.push_back("... and " + std::to_string(ds.race_count - ds.races.size()) + " more races or uninitialised reads");
  if (ds.violation_count > ds.violations.size())
    msgs.push_back("... and " + std::to_string(ds.violation_count - ds.violations.size()) + " more out-of-bounds accesses");
  if (!ds.failed.load()) {
    for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
      if (!ds.shadows[n]) continue;
      // On the pool: a pass over the shadow and 2-8x its bytes of records.
      std::atomic<uint64_t> total{0}, first_at{UINT64_MAX};
      parallel_ranges(ds.shadow_bytes[n], uint64_t(1) << 20, [&](uint64_t b, uint64_t e) {
        uint64_t f = UINT64_MAX;
        const uint64_t c = unwritten_bytes(ds.shadows[n], ds.shadow_mark, b, e, ds.race_shadow[n],
                                           ds.checks[n].granule_shift, ds.group_lo, f);
        if (!c) return;
        total.fetch_add(c, std::memory_order_relaxed);
        for (uint64_t cur = first_at.load(); f < cur && !first_at.compare_exchange_weak(cur, f);) {
        }
      });
      const uint64_t count = total.load(), first = first_at.load();
      if (count) {
        uint32_t es = kd.elem_size[n] ? kd.elem_size[n] : 1;
        std::ostringstream m;
        m << "unwritten output in kernel '" << ds.name << "': buffer(" << n << ") has " << count
          << " byte(s) never written (about " << (count + es - 1) / es << " element(s) of " << es
          << " bytes), first at element " << first / es << " (byte offset " << first << ")";
        msgs.push_back(m.str());
      }
    }
  }
  if (msgs.empty()) return 0;
  error.clear();
  for (size_t i = 0; i < msgs.size(); ++i) error += (i ? "\n" : "") + msgs[i];
  return 1;
}

}  // namespace

void release_check_memory() { CheckMemory::get().release_all(); }

}  // namespace mgsim
