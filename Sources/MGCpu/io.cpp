// File reads for the loaders (ts/io): many regions of one open file read straight into native
// buffers in one call, split over I/O threads. A read from the page cache is a copy (and, into
// fresh memory, page faults) in the kernel, and a read from disk waits: one thread leaves the other
// cores idle either way. MLX reads on a pool of 4 I/O threads whatever the core count (a thread
// blocked on the disk costs no core); so does this, MG_IO_THREADS to change it. The threads are
// started per call: a load big enough to use them takes milliseconds, a thread start microseconds.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "MGCpu.h"
#include "mgcpu.h"

namespace mgcpu {
namespace {

// Pieces of at most this many bytes are one task: big tensors are read by every thread, and a
// failure is found within a bounded amount of wasted work. Regions that follow each other both in
// the file and in memory (tensors packed into a shared buffer) are read as one: one pread per
// piece, not per tensor.
constexpr int64_t PIECE = int64_t(4) << 20;

struct Region {
  char *dst;
  int64_t offset;
  int64_t length;
};

struct Piece {
  char *dst;
  int64_t offset;
  int64_t length;
  // The first region of the run this piece belongs to, and where in the run it starts.
  int32_t first;
  int64_t at;
};

struct ReadJob {
  int fd;
  std::vector<Region> regions;
  std::vector<Piece> pieces;
  // The failing region (the smallest index among failures seen before the others gave up) and its
  // errno (0: the file ended early).
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> failed{INT64_MAX};
  int error = 0;
  std::mutex mutex;

  // The region holding byte `at` of the run that starts with region `first`.
  int32_t region_at(int32_t first, int64_t at) const {
    int32_t i = first;
    while (i + 1 < int32_t(regions.size()) && at >= regions[size_t(i)].length) at -= regions[size_t(i++)].length;
    return i;
  }

  void fail(int32_t region, int err) {
    std::lock_guard<std::mutex> lock(mutex);
    if (region < failed.load(std::memory_order_relaxed)) {
      failed.store(region, std::memory_order_relaxed);
      error = err;
    }
  }
};

// Fresh destination memory (a first load) takes one page fault per 4 KiB page inside pread, each a
// trap (costly in a VM) before the kernel allocates and zeroes the page. When a piece's first whole
// page is not resident yet, the piece is read in chunks whose pages are first populated in one call
// (zeroed pages still in cache when the copy lands on them). Memory already touched (buffers the
// allocator recycled: repeated loads) costs one mincore and keeps one pread per piece.
constexpr int64_t FRESH_CHUNK = int64_t(512) << 10;

bool fresh(const char *dst, int64_t length) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t a = (uintptr_t(dst) + page - 1) & ~(page - 1);
  if (a + page > uintptr_t(dst) + uintptr_t(length)) return false;
  unsigned char resident = 0;
  return mincore(reinterpret_cast<void *>(a), page, &resident) == 0 && !(resident & 1);
#else
  (void)dst;
  (void)length;
  return false;
#endif
}

// Populates the whole pages inside [dst, dst + length) (errors are harmless: an old kernel or a
// mapping that refuses leaves the faults to pread).
void populate(char *dst, int64_t length) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t a = (uintptr_t(dst) + page - 1) & ~(page - 1), e = (uintptr_t(dst) + uintptr_t(length)) & ~(page - 1);
  if (e > a) madvise(reinterpret_cast<void *>(a), e - a, MADV_POPULATE_WRITE);
#else
  (void)dst;
  (void)length;
#endif
}

void read_piece(ReadJob &job, const Piece &p) {
  const int64_t chunk = fresh(p.dst, p.length) ? FRESH_CHUNK : p.length;
  int64_t done = 0, populated = 0;
  while (done < p.length) {
    const int64_t end = std::min(p.length, done + chunk);
    if (chunk < p.length && populated < end) {
      populate(p.dst + done, end - done);
      populated = end;
    }
    ssize_t got = pread(job.fd, p.dst + done, size_t(end - done), off_t(p.offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      job.fail(job.region_at(p.first, p.at + done), got < 0 ? errno : 0);
      return;
    }
    done += got;
  }
}

// Takes pieces in order until none is left (or one failed).
void read_pieces(ReadJob *job) {
  for (;;) {
    int64_t i = job->next.fetch_add(1, std::memory_order_relaxed);
    if (i >= int64_t(job->pieces.size()) || job->failed.load(std::memory_order_relaxed) != INT64_MAX) return;
    read_piece(*job, job->pieces[size_t(i)]);
  }
}

int io_threads() {
  static const int n = [] {
    const char *env = std::getenv("MG_IO_THREADS");
    int v = env ? std::atoi(env) : 0;
    return v >= 1 && v <= 64 ? v : 4;
  }();
  return n;
}

// Below this many bytes one thread reads everything (starting helpers would cost more than it saves).
constexpr double PARALLEL_BYTES = double(4 << 20);


}  // namespace
}  // namespace mgcpu

using namespace mgcpu;

// Descriptor: fd, count, then count × (destination address, file offset, length). On failure the
// descriptor's first two words are overwritten with the failing region's index and its errno (0 when
// the file ended before the region did), and the status is MGCPU_ERROR.
MG_EXPORT int32_t mg_cpu_read_file(double *desc, int32_t words) {
  const char *fn = "mg_cpu_read_file";
  Reader r(desc, words, fn);
  ReadJob job;
  job.fd = int(r.integer(0, INT32_MAX, "fd"));
  int64_t count = r.integer(0, INT32_MAX, "region count");
  if (!r.ok) return fail(fn, r.error);
  if (int64_t(words) < 2 + 3 * count) return fail(fn, "descriptor too short for " + std::to_string(count) + " regions");
  if (int64_t(words) > 2 + 3 * count) return fail(fn, "descriptor has extra words");
  double total = 0;
  job.regions.reserve(size_t(count));
  for (int64_t i = 0; i < count; i++) {
    char *dst = r.pointer("destination");
    int64_t offset = r.integer(0, INT64_C(1) << 53, "file offset");
    int64_t length = r.integer(0, INT64_C(1) << 53, "length");
    if (!r.ok) return fail(fn, "region " + std::to_string(i) + ": " + r.error);
    if (length > 0 && dst == nullptr) return fail(fn, "region " + std::to_string(i) + ": null destination");
    job.regions.push_back({dst, offset, length});
    total += double(length);
  }
  // Runs of regions contiguous in the file and in memory, cut into pieces.
  for (int64_t i = 0; i < count;) {
    const Region &head = job.regions[size_t(i)];
    int64_t end = i + 1;
    int64_t length = head.length;
    while (head.length > 0 && end < count) {
      const Region &next = job.regions[size_t(end)];
      if (next.length == 0 || next.dst != head.dst + length || next.offset != head.offset + length) break;
      length += next.length;
      end++;
    }
    for (int64_t at = 0; at < length; at += PIECE) {
      job.pieces.push_back({head.dst + at, head.offset + at, std::min(PIECE, length - at), int32_t(i), at});
    }
    i = end;
  }
  int threads = int(std::min<double>({double(io_threads()), double(job.pieces.size()), std::ceil(total / PARALLEL_BYTES)}));
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; t++) {
    try {
      helpers.emplace_back(read_pieces, &job);
    } catch (...) {
      break;  // no thread to be had: the others (at least this one) read everything
    }
  }
  read_pieces(&job);
  for (auto &h : helpers) h.join();
  int64_t failed = job.failed.load();
  if (failed == INT64_MAX) return MGCPU_OK;
  desc[0] = double(failed);
  desc[1] = double(job.error);
  set_error(fn, "region " + std::to_string(failed) + ": " + (job.error ? std::strerror(job.error) : "the file ended early"));
  return MGCPU_ERROR;
}
