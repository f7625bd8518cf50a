// The worker pool under back-to-back jobs of different sizes (Sources/MGCpu/pool.cpp compiled in):
// every task of every job runs exactly once, with that job's function and context, and never after
// parallel_for returned. A helper late for a small job once claimed a task of the next, larger job
// before it was published, so that job's caller returned under a running task (a main-job crash).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "mgcpu.h"

namespace {

struct Job {
  int id;
  std::atomic<int> runs[64];
  std::atomic<bool> returned{false};
};

std::atomic<long> violations{0};

void task_a(void *ctx, int64_t t, int) {
  Job &j = *static_cast<Job *>(ctx);
  if (j.id % 2 != 0 || j.returned.load()) violations++;
  j.runs[t]++;
}

void task_b(void *ctx, int64_t t, int) {
  Job &j = *static_cast<Job *>(ctx);
  if (j.id % 2 != 1 || j.returned.load()) violations++;
  // a little work so helpers overlap the caller
  volatile double x = 0;
  for (int i = 0; i < 50; i++) x = x + i;
  j.runs[t]++;
}

}  // namespace

int main() {
  mgcpu::set_thread_count(4);
  const int rounds = 200000;
  long wrong_counts = 0;
  std::vector<Job> jobs(2);
  for (int r = 0; r < rounds; r++) {
    Job &j = jobs[r % 2];
    j.id = r;
    j.returned.store(false);
    const int tasks = r % 2 == 0 ? 2 : 3 + (r / 2) % 61;
    for (int t = 0; t < tasks; t++) j.runs[t].store(0);
    mgcpu::parallel_for(tasks, 4, r % 2 == 0 ? task_a : task_b, &j);
    j.returned.store(true);
    for (int t = 0; t < tasks; t++)
      if (j.runs[t].load() != 1) wrong_counts++;
  }
  // let a straggler show itself
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const long v = violations.load();
  const int failed = (v != 0) + (wrong_counts != 0);
  if (v) std::printf("FAIL: %ld task runs with another job's function/context or after the job returned\n", v);
  if (wrong_counts) std::printf("FAIL: %ld tasks did not run exactly once\n", wrong_counts);
  std::printf("pool: %d passed, %d failed\n", 2 - failed, failed);
  return failed ? 1 : 0;
}
