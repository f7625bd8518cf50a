// The persistent worker pool kernels split large work over (MG_CPU_THREADS, default the hardware
// concurrency). The calling thread is worker 0 and takes tasks too; helpers park on a condition
// variable after a short spin. The caller never waits for a helper to wake up: tasks are claimed
// through one atomic word (job generation, next task), so on a busy machine a helper the scheduler
// has not run yet simply finds nothing left, and the caller waits only for tasks actually claimed.
// Kernels make each task's result independent of the thread that runs it, so thread counts never
// change results.
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "mgcpu.h"

namespace mgcpu {
namespace {

constexpr int MAX_THREADS = 64;
// The task field of a finished job's claim word: no task can be claimed from it.
constexpr uint64_t CLOSED = 0xffffffffu;

// Scratch memory belongs to the OS thread (not the task index), so two JavaScript threads calling
// kernels at once never share it.
struct Scratch {
  void *ptr = nullptr;
  size_t bytes = 0;
  ~Scratch() { std::free(ptr); }
};
thread_local Scratch scratch_of_thread;

void pause() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

class Pool {
 public:
  static Pool &get() {
    static Pool *pool = new Pool();  // never destroyed: workers may outlive static destructors
    return *pool;
  }

  int threads() const { return threads_.load(std::memory_order_relaxed); }

  int set_threads(int n) {
    int previous = threads();
    threads_.store(n <= 0 ? default_threads() : std::min(n, MAX_THREADS), std::memory_order_relaxed);
    return previous;
  }

  void run(int64_t tasks, int threads, TaskFn fn, void *ctx) {
    threads = int(std::min<int64_t>(std::min(threads, this->threads()), tasks));
    // Serial when asked, when nested inside a task, when the task count does not fit the claim
    // word, or when another caller owns the pool.
    if (threads <= 1 || in_task_ || tasks >= int64_t(CLOSED) || !busy_.try_lock()) {
      for (int64_t t = 0; t < tasks; t++) fn(ctx, t, 0);
      return;
    }
    ensure_workers(threads - 1);
    fn_ = fn;
    ctx_ = ctx;
    tasks_.store(tasks, std::memory_order_release);  // after the close below: a helper seeing it sees the close
    helpers_.store(threads - 1, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    const uint64_t gen = ++generation_;
    claim_.store(gen << 32, std::memory_order_release);  // publishes the job: task 0 of generation gen
    {
      std::lock_guard<std::mutex> lock(mutex_);
      posted_.store(gen, std::memory_order_release);
    }
    wake_.notify_all();
    work(gen, 0);
    // wait for the tasks helpers claimed: spin briefly, then sleep
    for (int spin = 0; done_.load(std::memory_order_acquire) != tasks; spin++) {
      if (spin < 2000) {
        pause();
      } else {
        std::unique_lock<std::mutex> lock(mutex_);
        finished_.wait(lock, [&] { return done_.load(std::memory_order_acquire) == tasks; });
      }
    }
    // Close the job before the next one rewrites tasks_/fn_/ctx_: a helper still holding a claim
    // word of this generation must not see the next job's larger task count and claim a task of it
    // before that job is published (it did, and the next job's caller returned under a running task).
    claim_.store((gen << 32) | CLOSED, std::memory_order_release);
    busy_.unlock();
  }

 private:
  Pool() { threads_.store(default_threads(), std::memory_order_relaxed); }

  static int default_threads() {
    if (const char *env = std::getenv("MG_CPU_THREADS")) {
      int n = std::atoi(env);
      if (n > 0) return std::min(n, MAX_THREADS);
    }
    unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : int(std::min<unsigned>(hw, MAX_THREADS));
  }

  void ensure_workers(int n) {
    while (int(workers_.size()) < n) {
      const int index = int(workers_.size()) + 1;
      const uint64_t seen = posted_.load(std::memory_order_acquire);
      workers_.emplace_back([this, index, seen] { loop(index, seen); });
      workers_.back().detach();
    }
  }

  // Claims and runs tasks of generation `gen` until none is left. A claim succeeds only while the
  // job is still `gen`, so a late helper can never run a task of a job it did not see posted.
  void work(uint64_t gen, int thread) {
    in_task_ = true;
    for (;;) {
      uint64_t v = claim_.load(std::memory_order_acquire);
      if ((v >> 32) != gen) break;
      const int64_t t = int64_t(v & 0xffffffffu);
      if (t == CLOSED || t >= tasks_.load(std::memory_order_acquire)) break;
      if (!claim_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) continue;
      fn_(ctx_, t, thread);
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == tasks_.load(std::memory_order_relaxed)) {
        std::lock_guard<std::mutex> lock(mutex_);
        finished_.notify_one();
      }
    }
    in_task_ = false;
  }

  void loop(int index, uint64_t seen) {
    for (;;) {
      uint64_t gen;
      for (int spin = 0; (gen = posted_.load(std::memory_order_acquire)) == seen; spin++) {
        if (spin < 4000) {  // ~100 µs: back-to-back kernels find the helper awake
          pause();
        } else {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait(lock, [&] { return posted_.load(std::memory_order_acquire) != seen; });
        }
      }
      seen = gen;
      if (index <= helpers_.load(std::memory_order_relaxed)) work(gen, index);
    }
  }

  std::atomic<int> threads_{1};
  std::mutex busy_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  uint64_t generation_ = 0;            // the caller's count of posted jobs (under busy_)
  std::atomic<uint64_t> posted_{0};    // the newest posted generation (helpers wait for a change)
  std::atomic<uint64_t> claim_{0};     // generation << 32 | next task
  std::atomic<int64_t> done_{0};       // tasks of the current job completed
  std::vector<std::thread> workers_;
  TaskFn fn_ = nullptr;
  void *ctx_ = nullptr;
  std::atomic<int64_t> tasks_{0};      // read by late helpers while the caller may be writing it
  std::atomic<int> helpers_{0};
  static thread_local bool in_task_;
};

thread_local bool Pool::in_task_ = false;

}  // namespace

void parallel_for(int64_t tasks, int threads, TaskFn fn, void *ctx) {
  if (tasks <= 0) return;
  Pool::get().run(tasks, threads, fn, ctx);
}

int thread_count() { return Pool::get().threads(); }

int set_thread_count(int n) { return Pool::get().set_threads(n); }

// Below ~0.5 ms of work (`work` in ~ns) a second thread's wake-up and cache traffic cost more
// than they save: one thread keeps an L3-resident add at full speed.
int threads_for(double work) {
  constexpr double PER_THREAD = 250000.0;
  int n = thread_count();
  if (work < 2 * PER_THREAD || n <= 1) return 1;
  return int(std::min<double>(n, work / PER_THREAD));
}

void *thread_scratch(int, size_t bytes) {
  Scratch &s = scratch_of_thread;
  if (s.bytes < bytes) {
    std::free(s.ptr);
    size_t rounded = (bytes + 63) & ~size_t(63);
    s.ptr = std::aligned_alloc(64, rounded);
    s.bytes = s.ptr ? rounded : 0;
  }
  return s.ptr;
}

}  // namespace mgcpu
