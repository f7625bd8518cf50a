// Checks of the native CPU kernels' C ABI (Sources/MGCpu, linked from the runtime library) that the
// TypeScript tests cannot make: every kernel refuses each truncated or overlong descriptor with a
// tagged message (validation happens before memory is touched); two OS threads calling kernels at
// once get the same bits as one caller (the pool serves one caller, the other runs serially; scratch
// memory belongs to the OS thread); the instruction-set switch reports and restores what it picked;
// closed-form FFTs (a delta, a cosine, a Bluestein length, a four-step length); mg_cpu_read_file
// against the bytes written, and its report of a region the file ends before.
// Ends with "mgcpu: N passed, N failed".
#include <cerrno>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "MGCpu.h"

namespace {

int passed = 0, failed = 0;

void check(bool ok, const std::string &what) {
  if (ok) {
    passed++;
  } else {
    failed++;
    std::printf("FAIL  %s\n", what.c_str());
  }
}

double addr(const void *p) { return double(reinterpret_cast<uintptr_t>(p)); }

using Entry = int32_t (*)(const double *, int32_t);

// Dtype indices (ts/core/dtype.ts).
constexpr double I32 = 7, F32 = 10, C64 = 13;

// A valid descriptor for a kernel and the buffers it points into.
struct Case {
  std::string name;
  Entry entry;
  std::vector<double> desc;
};

std::vector<float> fbuf(size_t n, float seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = std::sin(seed + 0.37f * float(i));
  return v;
}

// ---- descriptor robustness -------------------------------------------------------------------------

void truncation(const Case &c) {
  const int32_t n = int32_t(c.desc.size());
  check(c.entry(c.desc.data(), n) == MGCPU_OK, c.name + ": the valid descriptor runs (" + mg_cpu_last_error() + ")");
  const std::string tag = "[" + c.name + "]";
  bool all = true;
  for (int32_t k = 0; k < n; k++) {
    const int32_t st = c.entry(c.desc.data(), k);
    const std::string msg = mg_cpu_last_error();
    if (st != MGCPU_ERROR || msg.rfind(tag, 0) != 0) {
      all = false;
      std::printf("  %s: %d of %d words gave status %d (%s)\n", c.name.c_str(), k, n, st, msg.c_str());
      break;
    }
  }
  check(all, c.name + ": every truncated descriptor is an error naming the kernel");
  std::vector<double> longer = c.desc;
  longer.push_back(0);
  check(c.entry(longer.data(), n + 1) == MGCPU_ERROR && std::string(mg_cpu_last_error()).find("extra words") != std::string::npos,
        c.name + ": an extra word is an error");
  check(c.entry(nullptr, 0) == MGCPU_ERROR, c.name + ": a null descriptor is an error");
}

// ---- tests -------------------------------------------------------------------------------------------------

void test_descriptors() {
  // operands shared by the cases below (every case only reads what it describes)
  std::vector<float> x = fbuf(4096, 1), y = fbuf(4096, 2), out(8192), out2(8192), out3(8192);
  std::vector<int32_t> i32 = {1, 0, 2, 1};
  std::vector<Case> cases;
  // copy: [ndim, esize, shape, src, strides, dst, strides]
  cases.push_back({"mg_cpu_copy", mg_cpu_copy, {1, 4, 8, addr(x.data()), 1, addr(out.data()), 1}});
  // arange: [dtype, n, start, step, dst]
  cases.push_back({"mg_cpu_arange", mg_cpu_arange, {F32, 8, 0, 1, addr(out.data())}});
  // elementwise: out = x + y over 16 floats (one instruction)
  cases.push_back({"mg_cpu_elementwise", mg_cpu_elementwise,
                   {1, 2, 1, 0, 1, 16, addr(x.data()), F32, 1, addr(y.data()), F32, 1, addr(out.data()), F32, 36, F32, F32, 2, 0, 1, -1}});
  // reduce: sum of a 4×8 over axis 1
  cases.push_back({"mg_cpu_reduce", mg_cpu_reduce, {2, 0, F32, 4, 8, addr(x.data()), 8, 1, 1, 1, addr(out.data())}});
  // argreduce: argmax along axis 0
  cases.push_back({"mg_cpu_argreduce", mg_cpu_argreduce, {2, F32, 1, 4, 8, addr(x.data()), 8, 1, 0, addr(out.data())}});
  // softmax of 4 rows of 8
  cases.push_back({"mg_cpu_softmax", mg_cpu_softmax, {2, F32, 0, 4, 8, addr(x.data()), 8, 1, addr(out.data())}});
  // cumulative sum along axis 1
  cases.push_back({"mg_cpu_scan", mg_cpu_scan, {2, F32, 0, 0, 1, 4, 8, addr(x.data()), 8, 1, 1, addr(out.data())}});
  // matmul: (4×8)·(8×4)
  cases.push_back({"mg_cpu_matmul", mg_cpu_matmul, {F32, 0, 4, 4, 8, addr(x.data()), 8, 1, addr(y.data()), 4, 1, addr(out.data()), 1, 0, 0, 0, 0}});
  // take_along_axis of a 4×8 with (4, 2) indices along axis 1
  cases.push_back({"mg_cpu_gather_axis", mg_cpu_gather_axis, {2, 4, 4, 2, addr(x.data()), 8, 1, 1, 8, addr(i32.data()), I32, 0, 1, addr(out.data())}});
  // fft: 8 complex points
  cases.push_back({"mg_cpu_fft", mg_cpu_fft, {1, C64, 8, addr(x.data()), 1, C64, 8, addr(out.data()), 1, 0, 0, 0, 0}});
  // convolution: 1-D, N 2, L 10, Cin 3; w (4, 3, 3)
  cases.push_back({"mg_cpu_convolution", mg_cpu_convolution,
                   {1, F32, 2, 10, 3, addr(x.data()), 30, 3, 1, 4, 3, 3, addr(y.data()), 9, 3, 1, 8, addr(out.data()), 1, 0, 1, 1, 1, 0}});
  // quantize (affine, 64 × 4 bits): 2 rows of 64
  cases.push_back({"mg_cpu_quantize", mg_cpu_quantize, {0, 64, 4, F32, 2, 64, addr(x.data()), addr(out.data()), addr(out2.data()), addr(out3.data())}});
  // dequantize of those words
  cases.push_back({"mg_cpu_dequantize", mg_cpu_dequantize, {0, 64, 4, F32, 2, 64, addr(out.data()), addr(out2.data()), addr(out3.data()), 0, addr(y.data())}});
  // sort: 4×8 along axis 1
  cases.push_back({"mg_cpu_sort", mg_cpu_sort, {2, F32, 4, 8, addr(x.data()), 8, 1, 1, addr(out.data()), 0}});
  // scatter along axis 0 of an 8×4: indices and updates (1, 4)
  cases.push_back({"mg_cpu_scatter", mg_cpu_scatter,
                   {F32, 1, 0, 2, 8, 4, addr(x.data()), 4, 1, addr(out.data()), 1, 2, 1, 4, addr(y.data()), 4, 1, 0, addr(i32.data()), I32, 4, 1}});
  // layer norm of 4 rows of 16
  cases.push_back({"mg_cpu_norm", mg_cpu_norm, {1, 0, 2, 4, 16, addr(x.data()), F32, 16, 1, 0, F32, 0, 0, F32, 0, 1e-5, F32, addr(out.data())}});
  // rope of (1, 4, 8)
  cases.push_back({"mg_cpu_rope", mg_cpu_rope, {3, 1, 4, 8, addr(x.data()), F32, 32, 8, 1, 8, 0, 1, 10000, 1, addr(i32.data()), I32, 1, 0, 0, F32, 0, F32, addr(out.data())}});
  // attention (1, 2, 4, 8) causal
  cases.push_back({"mg_cpu_sdpa", mg_cpu_sdpa,
                   {0, 1, 2, 2, 4, 4, 8, 8, 0.35, 1, addr(x.data()), F32, 64, 32, 8, 1, addr(y.data()), F32, 64, 32, 8, 1, addr(x.data()), F32, 64, 32, 8, 1,
                    0, 0, 0, 0, 0, 0, 0, F32, 0, addr(out.data()), addr(out2.data())}});
  // LU of a 6×6
  cases.push_back({"mg_cpu_linalg", mg_cpu_linalg, {0, 0, 0, F32, 2, 6, 6, addr(x.data()), 6, 1, addr(out.data()), addr(out2.data()), addr(out3.data())}});
  // quantized matmul of 2 rows by an (N 4, K 64) affine matrix quantized above
  std::vector<float> q(64 * 4), qs(4), qb(4);
  std::vector<double> qd = {0, 64, 4, F32, 2, 64, addr(x.data()), addr(q.data()), addr(qs.data()), addr(qb.data())};
  mg_cpu_quantize(qd.data(), int32_t(qd.size()));
  cases.push_back({"mg_cpu_quantized_matmul", mg_cpu_quantized_matmul,
                   {0, 64, 4, 1, F32, F32, 2, 2, 64, 0, addr(x.data()), 64, addr(q.data()), 8, addr(qs.data()), 1, addr(qb.data()), 1,
                    addr(out.data()), 0, 0, 0, 0, 0}});
  for (const Case &c : cases) truncation(c);
}

// mg_cpu_read_file writes its failure report into the descriptor: the cases call it through this.
int32_t read_file_entry(const double *desc, int32_t words) { return mg_cpu_read_file(const_cast<double *>(desc), words); }

void test_read_file() {
  char path[] = "/tmp/mgcpu-read-XXXXXX";
  int fd = mkstemp(path);
  check(fd >= 0, "mg_cpu_read_file: a temporary file");
  if (fd < 0) return;
  unlink(path);
  // 9 MiB + 5 bytes of a known pattern: byte i is (i * 7 + i / 4099) mod 256.
  const size_t size = (size_t(9) << 20) + 5;
  std::vector<uint8_t> data(size);
  for (size_t i = 0; i < size; i++) data[i] = uint8_t(i * 7 + i / 4099);
  check(pwrite(fd, data.data(), size, 0) == ssize_t(size), "mg_cpu_read_file: the file is written");
  // a region split into several pieces, small ones at odd offsets, an empty one, the last byte
  std::vector<uint8_t> big((size_t(5) << 20) + 3), a(1), b(4097), none, last(1);
  std::vector<double> d = {double(fd), 5, addr(big.data()), 3, double(big.size()), addr(a.data()), 0, 1,
                           addr(b.data()), 7777777, double(b.size()), 0, 12, 0, addr(last.data()), double(size - 1), 1};
  truncation({"mg_cpu_read_file", read_file_entry, d});
  check(mg_cpu_read_file(d.data(), int32_t(d.size())) == MGCPU_OK, std::string("mg_cpu_read_file: reads (") + mg_cpu_last_error() + ")");
  check(std::memcmp(big.data(), data.data() + 3, big.size()) == 0 && a[0] == data[0] &&
            std::memcmp(b.data(), data.data() + 7777777, b.size()) == 0 && last[0] == data[size - 1],
        "mg_cpu_read_file: every region holds the file's bytes");
  // region 1 runs past the end: reported as region 1, errno 0 (the file ended), and tagged
  std::vector<double> past = {double(fd), 2, addr(a.data()), 0, 1, addr(b.data()), double(size - 100), double(b.size())};
  const int32_t st = mg_cpu_read_file(past.data(), int32_t(past.size()));
  check(st == MGCPU_ERROR && past[0] == 1 && past[1] == 0 &&
            std::string(mg_cpu_last_error()) == "[mg_cpu_read_file] region 1: the file ended early",
        std::string("mg_cpu_read_file: a region past the end is reported (") + mg_cpu_last_error() + ")");
  // regions that follow each other in the file and in memory are read as one run; a failure inside
  // the run still names the region the file ends in
  std::vector<uint8_t> packed(300);
  std::vector<double> run = {double(fd), 3, addr(packed.data()), 1000, 100, addr(packed.data() + 100), 1100, 100,
                             addr(packed.data() + 200), 1200, 100};
  check(mg_cpu_read_file(run.data(), int32_t(run.size())) == MGCPU_OK && std::memcmp(packed.data(), data.data() + 1000, 300) == 0,
        "mg_cpu_read_file: a run of contiguous regions holds the file's bytes");
  std::vector<double> cut = {double(fd), 3, addr(packed.data()), double(size - 150), 100, addr(packed.data() + 100), double(size - 50), 100,
                             addr(packed.data() + 200), double(size + 50), 100};
  check(mg_cpu_read_file(cut.data(), int32_t(cut.size())) == MGCPU_ERROR && cut[0] == 1 && cut[1] == 0,
        "mg_cpu_read_file: the file ending inside a run names the region it ends in");
  // fresh (never touched) destination memory takes the populate-then-read path in chunks: the
  // bytes land where asked (an unaligned start, a partial last page), nothing around them changes,
  // and a region running past the end in fresh memory is still reported as that region
  const size_t span = size_t(8) << 20;
  void *map = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  check(map != MAP_FAILED, "mg_cpu_read_file: fresh memory is mapped");
  if (map != MAP_FAILED) {
    uint8_t *fresh = static_cast<uint8_t *>(map);
    const size_t len = (size_t(5) << 20) + 3;
    std::vector<double> f = {double(fd), 2, addr(fresh + 100), 3, double(len), addr(fresh + (size_t(6) << 20)), 4097, 4097};
    check(mg_cpu_read_file(f.data(), int32_t(f.size())) == MGCPU_OK, std::string("mg_cpu_read_file: reads into fresh memory (") + mg_cpu_last_error() + ")");
    bool around = true;
    for (size_t i = 0; i < 100; i++) around = around && fresh[i] == 0;
    around = around && fresh[100 + len] == 0 && fresh[(size_t(6) << 20) + 4097] == 0;
    check(std::memcmp(fresh + 100, data.data() + 3, len) == 0 && std::memcmp(fresh + (size_t(6) << 20), data.data() + 4097, 4097) == 0 && around,
          "mg_cpu_read_file: fresh memory holds the file's bytes and nothing around them changed");
    munmap(map, span);
    map = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map != MAP_FAILED) {
      fresh = static_cast<uint8_t *>(map);
      std::vector<double> g = {double(fd), 2, addr(fresh), 0, 10, addr(fresh + 4096), double(size - (size_t(3) << 20)), double(size_t(4) << 20)};
      check(mg_cpu_read_file(g.data(), int32_t(g.size())) == MGCPU_ERROR && g[0] == 1 && g[1] == 0,
            "mg_cpu_read_file: a region past the end in fresh memory is reported as that region");
      munmap(map, span);
    }
  }
  close(fd);
  // a closed descriptor: an errno, not a crash
  std::vector<double> closed = {double(fd), 1, addr(a.data()), 0, 1};
  check(mg_cpu_read_file(closed.data(), int32_t(closed.size())) == MGCPU_ERROR && closed[0] == 0 && closed[1] == EBADF,
        "mg_cpu_read_file: a bad file descriptor reports EBADF");
}

// An FFT of n complex points (float32 pairs), forward.
std::vector<float> fft(const std::vector<float> &in, int64_t n) {
  std::vector<float> out(size_t(2 * n));
  std::vector<double> d = {1, C64, double(n), addr(in.data()), 1, C64, double(n), addr(out.data()), 1, 0, 0, 0, 0};
  if (mg_cpu_fft(d.data(), int32_t(d.size())) != MGCPU_OK) std::printf("  fft %lld: %s\n", (long long)n, mg_cpu_last_error());
  return out;
}

void test_fft_closed_forms() {
  for (int64_t n : {1000, 997, 65536, 2 * 3 * 5 * 7 * 11 * 13}) {
    // a delta at 0 transforms to all ones
    std::vector<float> delta(size_t(2 * n), 0.0f);
    delta[0] = 1;
    std::vector<float> f = fft(delta, n);
    double err = 0;
    for (int64_t k = 0; k < n; k++) err = std::max(err, std::abs(std::complex<double>(f[size_t(2 * k)], f[size_t(2 * k + 1)]) - 1.0));
    check(err < 1e-6, "fft " + std::to_string(n) + ": a delta gives ones (error " + std::to_string(err) + ")");
    // cos(2π·3j/n) gives n/2 at bins 3 and n − 3, zero elsewhere
    std::vector<float> c(size_t(2 * n), 0.0f);
    for (int64_t j = 0; j < n; j++) c[size_t(2 * j)] = float(std::cos(2 * M_PI * 3.0 * double(j) / double(n)));
    f = fft(c, n);
    err = 0;
    for (int64_t k = 0; k < n; k++) {
      const double want = (k == 3 || k == n - 3) ? double(n) / 2 : 0;
      err = std::max(err, std::abs(std::complex<double>(f[size_t(2 * k)], f[size_t(2 * k + 1)]) - want) / double(n));
    }
    check(err < 1e-6, "fft " + std::to_string(n) + ": a cosine gives two spikes (relative error " + std::to_string(err) + ")");
  }
}

// Work that uses the pool (large enough to go parallel), returning its output bytes.
std::vector<float> workload(int which) {
  std::vector<float> x = fbuf(1 << 16, float(which) + 1), out(1 << 17);
  std::vector<double> d;
  if (which == 0) {
    d = {1, C64, 1 << 15, addr(x.data()), 1, C64, 1 << 15, addr(out.data()), 1, 0, 0, 0, 0};  // one long FFT (four-step)
    mg_cpu_fft(d.data(), int32_t(d.size()));
  } else if (which == 1) {
    d = {2, F32, 64, 1024, addr(x.data()), 1024, 1, 1, addr(out.data()), 1};  // argsort of 64 rows
    mg_cpu_sort(d.data(), int32_t(d.size()));
  } else {
    // a 2-D convolution: N 4, 32×32×4 input, 16 filters of 3×3×4
    std::vector<float> w = fbuf(16 * 9 * 4, 9);
    d = {2, F32, 4, 32, 32, 4, addr(x.data()), 4096, 128, 4, 1, 16, 3, 3, 4, addr(w.data()), 36, 12, 4, 1, 30, 30, addr(out.data()),
         1, 1, 0, 0, 1, 1, 1, 1, 1, 0};
    mg_cpu_convolution(d.data(), int32_t(d.size()));
  }
  return out;
}

void test_concurrent_callers() {
  const int prev = mg_cpu_set_threads(2);
  std::vector<std::vector<float>> want;
  for (int w = 0; w < 3; w++) want.push_back(workload(w));
  bool same = true;
  auto worker = [&](int offset) {
    for (int round = 0; round < 6; round++) {
      const int w = (round + offset) % 3;
      if (std::memcmp(workload(w).data(), want[size_t(w)].data(), want[size_t(w)].size() * sizeof(float)) != 0) same = false;
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  check(same, "two OS threads calling kernels at once get one caller's bits");
  mg_cpu_set_threads(1);
  bool single = true;
  for (int w = 0; w < 3; w++)
    if (std::memcmp(workload(w).data(), want[size_t(w)].data(), want[size_t(w)].size() * sizeof(float)) != 0) single = false;
  check(single, "1 thread gives the bits of 2");
  mg_cpu_set_threads(prev);
}

void test_isa_switch() {
  const std::string info = mg_cpu_info_json();
  check(info.find("\"isa\"") != std::string::npos, "mg_cpu_info_json names the instruction set");
  const int32_t best = mg_cpu_set_isa(0);
  const int32_t base = mg_cpu_set_isa(1);
  check(base == 1, "the baseline can always be forced");
  const std::string base_info = mg_cpu_info_json();
  check(base_info.find("sse2") != std::string::npos || base_info.find("neon") != std::string::npos, "the baseline reports sse2 or neon");
  const std::vector<float> fb = workload(0), cb = workload(2);
  const int32_t avx = mg_cpu_set_isa(2);
  check(best == 1 ? avx == 1 : avx == 2, "asking for AVX2 gives it where the machine has it");
  // AVX-512 (3) only replaces lane-wise float kernels: the workloads below keep their bits
  const int32_t wide = mg_cpu_set_isa(3);
  check(best == 3 ? wide == 3 && std::string(mg_cpu_info_json()).find("avx512") != std::string::npos : wide == avx,
        "asking for AVX-512 gives it where the machine has it, else keeps the set in use");
  // the FFT has no contraction: the same bits on every instruction set
  check(std::memcmp(workload(0).data(), fb.data(), fb.size() * sizeof(float)) == 0, "the FFT gives the same bits on both instruction sets");
  const std::vector<float> ca = workload(2);
  double diff = 0;
  for (size_t i = 0; i < ca.size(); i++) diff = std::max(diff, double(std::fabs(ca[i] - cb[i])));
  check(diff < 1e-4, "the convolution agrees across instruction sets (FMA rounding only)");
  mg_cpu_set_isa(0);
}

}  // namespace

int main() {
  test_descriptors();
  test_fft_closed_forms();
  test_concurrent_callers();
  test_isa_switch();
  test_read_file();
  std::printf("mgcpu: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
