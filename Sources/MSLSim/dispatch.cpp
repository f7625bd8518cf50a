// Dispatch execution: a worker pool runs threadgroups in parallel; inside a threadgroup, lanes run
// as a plain loop (generated in the kernel object) or as cooperative fibers scheduled here.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "fiber.h"
#include "sim_internal.h"

namespace mgsim {
namespace {

constexpr uint64_t kThreadgroupMemoryLimit = 32768;
constexpr int kMaxReportedViolations = 8;

enum LaneState : uint32_t { kReady = 0, kAtBarrier = abi::block_barrier, kAtSimd = abi::block_simd, kExited = 3 };

struct Worker;

struct LaneHost {
  FiberContext ctx;
  uint32_t state = kReady;
  uint64_t token = 0;
  abi::lane *ln = nullptr;
  Worker *worker = nullptr;
  const abi::kernel_desc *kd = nullptr;
};

// Per-OS-thread state: fiber stacks (mmap'd once, guard page below each, reused), lanes and the
// dynamic threadgroup memory of the threadgroup this thread is running.
struct Worker {
  FiberContext sched;
  std::vector<abi::lane> lanes;
  std::vector<LaneHost> hosts;
  std::vector<char *> stacks;
  size_t stack_size = 0;
  size_t guard = 0;
  alignas(64) unsigned char tg_mem[kThreadgroupMemoryLimit + 64 * abi::kMaxBindings];

  ~Worker() {
    for (char *s : stacks) munmap(s - guard, stack_size + guard);
    for (auto &h : hosts) fiber_destroy(h.ctx);
    fiber_destroy(sched);
  }

  bool ensure_lanes(uint32_t n, std::string &error) {
    if (stack_size == 0) {
      size_t kb = 256;
      if (const char *e = getenv("MG_SIM_STACK_KB")) {
        long v = atol(e);
        if (v >= 16 && v <= 65536) kb = size_t(v);
      }
      guard = size_t(sysconf(_SC_PAGESIZE));
      stack_size = (kb * 1024 + guard - 1) / guard * guard;
    }
    if (lanes.size() < n) {
      lanes.resize(n);
      hosts.resize(n);
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
};

Worker &this_worker() {
  static thread_local Worker *w = new Worker();  // lives as long as its thread; never freed early
  return *w;
}

struct DispatchState {
  const mgsim_dispatch *d = nullptr;
  const abi::kernel_desc *kd = nullptr;
  const char *name = "";
  abi::launch L{};
  abi::check_binding checks[abi::kMaxBindings]{};
  std::vector<uint8_t> shadows[abi::kMaxBindings];
  uint32_t groups[3]{};
  uint64_t total_groups = 0;
  uint64_t tg_offset[abi::kMaxBindings]{};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string error;
  std::vector<std::string> violations;
  uint64_t violation_count = 0;

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
  h->state = kind;
  h->token = token;
  ln->leader = 0;
  fiber_switch(h->ctx, h->worker->sched);
}

void host_misuse(const abi::launch *L, const char *what) {
  auto *d = static_cast<DispatchState *>(L->dispatch);
  d->fail(std::string("kernel '") + d->name + "' called " + what +
          " outside a cooperative lane (the simulator classified it as barrier-free; call it "
          "directly rather than through a function pointer)");
}

void host_violation(const abi::check_binding *b, int64_t off, uint32_t size, int write, const uint32_t *pos) {
  auto *d = static_cast<DispatchState *>(b->dispatch);
  std::lock_guard<std::mutex> g(d->mu);
  d->violation_count++;
  if (d->violations.size() >= kMaxReportedViolations) return;
  uint32_t es = b->elem_size ? b->elem_size : 1;
  std::ostringstream s;
  s << "out-of-bounds " << (write ? "write" : "read") << " in kernel '" << d->name << "': buffer("
    << b->index << ") element " << (off >= 0 ? off / int64_t(es) : -((-off + es - 1) / int64_t(es)))
    << " (byte offset " << off << ", " << size << " bytes; the binding has " << b->length
    << " bytes) by thread " << pos_string(pos);
  d->violations.push_back(s.str());
}

const abi::host_api g_host = {abi::kVersion, &host_block, &host_misuse, &host_violation};

void lane_entry(void *arg) {
  LaneHost *h = static_cast<LaneHost *>(arg);
  h->kd->lane_main(h->ln);
  h->state = kExited;
  fiber_switch(h->ctx, h->worker->sched);
  abort();  // never resumed after exiting
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
}

// Runs one threadgroup's lanes as fibers until all exit; false (with ds.fail) on a barrier error.
bool run_group_fibers(DispatchState &ds, Worker &w, const abi::group &G) {
  const uint32_t n = G.nthreads;
  std::string err;
  if (!w.ensure_lanes(n, err)) {
    ds.fail(err);
    return false;
  }
  const uint32_t sx = G.size[0], sy = G.size[1];
  const uint32_t *tg = ds.L.threads_per_threadgroup;
  for (uint32_t i = 0; i < n; ++i) {
    abi::lane &ln = w.lanes[i];
    abi::thread_attrs &a = ln.a;
    a.local[0] = i % sx;
    a.local[1] = (i / sx) % sy;
    a.local[2] = i / (sx * sy);
    for (int k = 0; k < 3; ++k) a.grid[k] = G.id[k] * tg[k] + a.local[k];
    a.index = i;
    a.lane_id = i & 31u;
    a.simd_id = i >> 5;
    ln.L = &ds.L;
    ln.G = &G;
    ln.in = nullptr;
    ln.out = nullptr;
    ln.active = 0;
    ln.leader = 0;
    ln.simd_base = &w.lanes[i & ~31u];
    LaneHost &h = w.hosts[i];
    h.state = kReady;
    h.token = 0;
    h.ln = &ln;
    h.worker = &w;
    h.kd = ds.kd;
    ln.host = &h;
    // Stagger stack tops so 32 lanes' hot frames do not all map to the same cache sets.
    fiber_init(h.ctx, w.stacks[i], w.stack_size - (i % 32) * 192, &lane_entry, &h);
  }
  uint32_t exited = 0;
  std::vector<uint64_t> tokens;
  for (;;) {
    for (uint32_t i = 0; i < n; ++i) {
      LaneHost &h = w.hosts[i];
      if (h.state != kReady) continue;
      fiber_switch(w.sched, h.ctx);
      if (h.state == kExited) ++exited;
    }
    if (exited == n) return true;
    if (ds.failed.load(std::memory_order_relaxed)) return false;
    bool released = false;
    // Simd collectives: every non-exited lane of the simdgroup is blocked (that is all of them
    // now); lanes at the same call site form an active set.
    for (uint32_t base = 0; base < n; base += 32) {
      uint32_t end = std::min(n, base + 32);
      tokens.clear();
      for (uint32_t i = base; i < end; ++i)
        if (w.hosts[i].state == kAtSimd && std::find(tokens.begin(), tokens.end(), w.hosts[i].token) == tokens.end())
          tokens.push_back(w.hosts[i].token);
      for (uint64_t t : tokens) {
        uint32_t mask = 0;
        for (uint32_t i = base; i < end; ++i)
          if (w.hosts[i].state == kAtSimd && w.hosts[i].token == t) mask |= 1u << (i - base);
        uint32_t leader = base + uint32_t(__builtin_ctz(mask));
        for (uint32_t i = base; i < end; ++i) {
          if (!((mask >> (i - base)) & 1u)) continue;
          w.lanes[i].active = mask;
          w.lanes[i].leader = i == leader;
          w.hosts[i].state = kReady;
        }
        released = true;
      }
    }
    if (released) continue;
    uint32_t at_barrier = 0;
    for (uint32_t i = 0; i < n; ++i)
      if (w.hosts[i].state == kAtBarrier) ++at_barrier;
    std::ostringstream where;
    where << "kernel '" << ds.name << "', threadgroup (" << G.id[0] << ", " << G.id[1] << ", " << G.id[2] << ")";
    if (at_barrier > 0 && exited > 0) {
      std::ostringstream m;
      m << "threadgroup_barrier reached by " << at_barrier << " of " << n << " threads in " << where.str()
        << ": " << exited << " thread(s) exited without reaching it";
      ds.fail(m.str());
      return false;
    }
    if (at_barrier == n - exited && at_barrier > 0) {
      for (uint32_t i = 0; i < n; ++i)
        if (w.hosts[i].state == kAtBarrier) w.hosts[i].state = kReady;
      continue;
    }
    ds.fail("lanes can never make progress in " + where.str());
    return false;
  }
}

void run_group(DispatchState &ds, uint64_t linear) {
  Worker &w = this_worker();
  abi::group G;
  fill_group(ds, linear, G, w);
  if (ds.kd->needs_fibers) run_group_fibers(ds, w, G);
  else ds.kd->plain(&ds.L, &G);
}

// A small pool: the dispatching thread works too. One dispatch uses the pool at a time; a
// concurrent dispatch from another thread runs on its own thread instead of waiting.
class Pool {
 public:
  static Pool &get() {
    static Pool *p = new Pool();  // never destroyed: worker threads outlive static destruction
    return *p;
  }
  unsigned size() const { return unsigned(threads_) + 1; }

  void run(const std::function<void()> &job) {
    std::unique_lock<std::mutex> run_lock(run_mu_, std::try_to_lock);
    if (!run_lock.owns_lock() || threads_ == 0) {
      job();
      return;
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      job_ = &job;
      pending_ = threads_;
      ++generation_;
    }
    cv_.notify_all();
    job();
    std::unique_lock<std::mutex> g(mu_);
    done_cv_.wait(g, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  Pool() {
    unsigned n = std::thread::hardware_concurrency();
    if (const char *e = getenv("MG_SIM_THREADS")) {
      long v = atol(e);
      if (v >= 1 && v <= 1024) n = unsigned(v);
    }
    if (n == 0) n = 1;
    threads_ = int(n) - 1;
    for (int i = 0; i < threads_; ++i) std::thread([this] { loop(); }).detach();
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
      }
      if (job) (*job)();
      std::lock_guard<std::mutex> g(mu_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
  int threads_ = 0;
  std::mutex run_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void()> *job_ = nullptr;
  int pending_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace

int run_dispatch(const mgsim_dispatch &d, std::string &error) {
  const mgsim_function *fn = d.function;
  if (!fn || !fn->kernel) {
    error = "no function";
    return 1;
  }
  DispatchState ds;
  ds.d = &d;
  ds.kd = fn->kernel;
  ds.name = fn->kernel->name;
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
  stats().dispatches.fetch_add(1);
  if (kd.needs_fibers) stats().fiber_dispatches.fetch_add(1);
  if (ds.total_groups == 0) return 0;

  ds.L.host = &g_host;
  ds.L.dispatch = &ds;
  for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
    ds.L.buffers[n] = d.buffers[n].data;
    ds.L.lengths[n] = d.buffers[n].length;
  }
  const auto *mod = fn->library->module->desc;
  if (mod->n_fconsts) {
    ds.L.fc_values = fn->fc_values.data();
    ds.L.fc_defined = fn->fc_defined.data();
  }
  // Kernels compiled in checked mode bind checked pointers; the launch then carries the bounds.
  const bool checked = fn->library->module->checked;
  for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
    abi::check_binding &c = ds.checks[n];
    c.base = static_cast<char *>(d.buffers[n].data);
    c.length = d.buffers[n].length;
    c.index = n;
    c.elem_size = kd.elem_size[n];
    c.host = &g_host;
    c.dispatch = &ds;
    if (checked && ((d.must_write_mask >> n) & 1u) && d.buffers[n].data && d.buffers[n].length) {
      ds.shadows[n].assign(d.buffers[n].length, 0);
      c.shadow = ds.shadows[n].data();
      // Poison: an element the kernel forgets to write reads back as NaN / all-ones.
      memset(d.buffers[n].data, 0xff, d.buffers[n].length);
    }
  }
  ds.L.checks = checked ? ds.checks : nullptr;

  Pool &pool = Pool::get();
  uint64_t total_threads = ds.total_groups * tg_threads;
  std::atomic<uint64_t> next{0};
  uint64_t chunk = std::max<uint64_t>(1, ds.total_groups / (uint64_t(pool.size()) * 8));
  auto job = [&] {
    for (;;) {
      if (ds.failed.load(std::memory_order_relaxed)) return;
      uint64_t b = next.fetch_add(chunk);
      if (b >= ds.total_groups) return;
      uint64_t e = std::min(ds.total_groups, b + chunk);
      for (uint64_t g = b; g < e; ++g) {
        run_group(ds, g);
        if (ds.failed.load(std::memory_order_relaxed)) return;
      }
    }
  };
  // Small dispatches are not worth waking the pool.
  if (ds.total_groups == 1 || total_threads < 2048) job();
  else pool.run(std::function<void()>(job));

  std::vector<std::string> msgs;
  if (!ds.error.empty()) msgs.push_back(ds.error);
  for (auto &v : ds.violations) msgs.push_back(v);
  if (ds.violation_count > ds.violations.size())
    msgs.push_back("... and " + std::to_string(ds.violation_count - ds.violations.size()) + " more out-of-bounds accesses");
  if (!ds.failed.load()) {
    for (uint32_t n = 0; n < abi::kMaxBindings; ++n) {
      if (ds.shadows[n].empty()) continue;
      const auto &sh = ds.shadows[n];
      uint64_t first = UINT64_MAX, count = 0;
      for (uint64_t i = 0; i < sh.size(); ++i)
        if (!sh[i]) {
          if (first == UINT64_MAX) first = i;
          ++count;
        }
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

}  // namespace mgsim
