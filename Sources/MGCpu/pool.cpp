// The persistent worker pool kernels split large work over (MG_CPU_THREADS, default the hardware
// concurrency). The calling thread is worker 0; the others park on a condition variable after a
// short spin, so back-to-back kernels do not pay a wake-up each. Tasks are handed out in order by
// an atomic counter; kernels make each task's result independent of the thread that runs it, so
// thread counts never change results.
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

// Scratch memory belongs to the OS thread (not the task index), so two JavaScript threads calling
// kernels at once never share it.
struct Scratch {
  void *ptr = nullptr;
  size_t bytes = 0;
  ~Scratch() { std::free(ptr); }
};
thread_local Scratch scratch_of_thread;

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
    // Serial when asked, when nested inside a task, or when another caller owns the pool.
    if (threads <= 1 || in_task_ || !busy_.try_lock()) {
      for (int64_t t = 0; t < tasks; t++) fn(ctx, t, 0);
      return;
    }
    ensure_workers(threads - 1);
    fn_ = fn;
    ctx_ = ctx;
    tasks_ = tasks;
    next_.store(0, std::memory_order_relaxed);
    helpers_ = threads - 1;
    remaining_.store(threads - 1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    work(0);
    // wait for the helpers: spin briefly, then sleep
    for (int spin = 0; remaining_.load(std::memory_order_acquire) != 0; spin++) {
      if (spin < 4000) {
        pause();
      } else {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [&] { return remaining_.load(std::memory_order_acquire) == 0; });
      }
    }
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

  static void pause() {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
  }

  void ensure_workers(int n) {
    while (int(workers_.size()) < n) {
      // the worker starts from the generation before the job about to be posted, whenever it runs
      const int index = int(workers_.size()) + 1;
      const uint64_t seen = generation_.load(std::memory_order_acquire);
      workers_.emplace_back([this, index, seen] { loop(index, seen); });
      workers_.back().detach();
    }
  }

  void work(int thread) {
    in_task_ = true;
    for (;;) {
      int64_t t = next_.fetch_add(1, std::memory_order_relaxed);
      if (t >= tasks_) break;
      fn_(ctx_, t, thread);
    }
    in_task_ = false;
  }

  void loop(int index, uint64_t seen) {
    for (;;) {
      for (int spin = 0; generation_.load(std::memory_order_acquire) == seen; spin++) {
        if (spin < 20000) {
          pause();
        } else {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        }
      }
      seen = generation_.load(std::memory_order_acquire);
      if (index <= helpers_) {
        work(index);
        if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
          std::lock_guard<std::mutex> lock(mutex_);
          done_.notify_one();
        }
      }
    }
  }

  std::atomic<int> threads_{1};
  std::mutex busy_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};
  std::vector<std::thread> workers_;
  TaskFn fn_ = nullptr;
  void *ctx_ = nullptr;
  int64_t tasks_ = 0;
  int helpers_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> remaining_{0};
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

// Below ~100 µs of work a second thread's wake-up and cache misses cost more than they save.
int threads_for(double work) {
  constexpr double PER_THREAD = 200000.0;
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
