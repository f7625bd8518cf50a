// Faults in kernel code fail the dispatch with a message instead of killing the process: wild
// pointer writes and reads (plain loops and fibers), a lane's stack overflow, a plain kernel's
// stack overflow, integer division by zero; the process keeps working afterwards. Faults outside
// kernel code still reach the handler installed before the simulator's, or the default action.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static const char *kSrc = R"(
#include <metal_stdlib>
using namespace metal;
// Thread 37 writes through a pointer made from an integer (page zero: never mapped).
kernel void wild_write(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  out[gid] = 1.0f;
  if (gid == 37) {
    device float* wild = reinterpret_cast<device float*>(ulong(0x1000) + 4 * gid);
    *wild = 2.0f;
  }
}
kernel void wild_read(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  const device float* wild = reinterpret_cast<const device float*>(ulong(0x2000) + 4 * gid);
  out[gid] = gid == 5 ? *wild : 0.0f;
}
// The same fault after a barrier and a collective: the thread runs as a fiber.
kernel void wild_fiber(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]],
                       uint lid [[thread_index_in_threadgroup]]) {
  threadgroup float shared[64];
  shared[lid] = simd_sum(float(gid));
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (gid == 45) {
    device float* wild = reinterpret_cast<device float*>(ulong(0x3000));
    *wild = shared[0];
  }
  out[gid] = shared[63 - lid];
}
// 512 KiB of locals in a lane (whose stack is 256 KiB).
kernel void big_lane_locals(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                            uint gid [[thread_position_in_grid]]) {
  float big[131072];
  for (uint i = 0; i < 131072; ++i) big[i] = in[i & 63] + float(i);
  threadgroup_barrier(mem_flags::mem_none);
  out[gid] = big[uint(in[gid & 63]) & 131071];
}
// 64 MiB of locals in a barrier-free kernel: more than any thread's stack.
kernel void big_plain_locals(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                             uint gid [[thread_position_in_grid]]) {
  float big[16 * 1024 * 1024];
  for (uint i = 0; i < 16 * 1024 * 1024; ++i) big[i] = in[i & 63] + float(i);
  out[gid] = big[uint(in[gid & 63]) & (16 * 1024 * 1024 - 1)];
}
kernel void divide(device const int* num [[buffer(0)]], device const int* den [[buffer(1)]],
                   device int* out [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  out[gid] = num[gid] / den[gid];
}
kernel void fine(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                 uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  out[gid] = simd_sum(in[gid]) + float(lane);
}
)";

// A correct fiber kernel after a failure: the process and the worker that faulted still work.
static bool still_works(Lib &lib, uint32_t n) {
  auto *f = lib.fn("fine");
  std::vector<float> in(n), out(n, -1);
  for (uint32_t i = 0; i < n; ++i) in[i] = float(i % 7);
  std::string e = Dispatch(f).buf(0, in).buf(1, out).threads(n, 1, 1, 64, 1, 1).run();
  bool ok = e.empty();
  for (uint32_t i = 0; i < n && ok; ++i) {
    uint32_t base = i & ~31u, end = std::min(n, base + 32);
    float s = 0;
    for (uint32_t j = base; j < end; ++j) s += in[j];
    ok = out[i] == s + float(i & 31u);
  }
  mgsim_function_release(f);
  return ok;
}

static void check_fault(Lib &lib, const char *name, uint32_t threads, const std::string &want1, const std::string &want2,
                        int nbuf = 1) {
  auto *f = lib.fn(name);
  std::vector<float> in(64, 3.0f), out(threads, 0);
  Dispatch d(f);
  if (nbuf == 1) d.buf(0, out);
  else d.buf(0, in).buf(1, out);
  std::string e = d.threads(threads, 1, 1, 64, 1, 1).run();
  CHECK(e.find("[mgsim dispatch] kernel '" + std::string(name) + "': ") == 0 && e.find(want1) != std::string::npos &&
            e.find(want2) != std::string::npos,
        "%s over %u threads fails the dispatch: %s", name, threads, e.c_str());
  CHECK(still_works(lib, threads), "after %s, a fiber kernel on the same threads computes correct results", name);
  mgsim_function_release(f);
}

// Child: run one dispatch (installs the simulator's handlers over `mode`'s), then fault in host code;
// or, in mode "nocompiler" (MG_SIM_CXX names no program), compile a new source.
static int child(const char *mode, Lib &lib) {
  if (std::string(mode) == "nocompiler") {
    Lib fresh("kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = 7.5f; }");
    printf("%s\n", fresh.error.c_str());
    return fresh.lib ? 1 : 0;
  }
  if (std::string(mode) == "chained") {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = [](int) { _exit(42); };
    sigaction(SIGSEGV, &sa, nullptr);
  }
  if (!still_works(lib, 64)) return 3;
  volatile int *null_pointer = nullptr;
  return *null_pointer;  // outside kernel code: must not be recovered
}

int main(int argc, char **argv) {
  Lib lib(kSrc);
  if (argc == 3 && std::string(argv[1]) == "child") return child(argv[2], lib);
  CHECK(lib.lib, "fault kernels compile %s", lib.error.c_str());
  if (!lib.lib) return finish();

  // Small dispatches run on the calling thread, large ones on the pool: both recover.
  for (uint32_t threads : {64u, 4096u}) {
    check_fault(lib, "wild_write", threads, "invalid memory access at address 0x1094 (thread position (37, 0, 0))",
                "run with MG_SIM_CHECK=1 to find the access");
    check_fault(lib, "wild_read", threads, "invalid memory access at address 0x2014 (thread position (5, 0, 0))",
                "MG_SIM_CHECK=1");
    check_fault(lib, "wild_fiber", threads, "invalid memory access at address 0x3000 (thread position (45, 0, 0))",
                "MG_SIM_CHECK=1");
    check_fault(lib, "big_lane_locals", threads, "stack overflow in a lane of kernel big_lane_locals",
                "MG_SIM_STACK_KB raises the 256 KiB limit", 2);
    check_fault(lib, "big_plain_locals", threads, "stack overflow (thread position (", "KiB stack of the simulator thread",
                2);
  }
  {
    auto *f = lib.fn("divide");
    std::vector<int> num(100, 7), den(100, 1), out(100, 0);
    den[61] = 0;
    std::string e = Dispatch(f).buf(0, num).buf(1, den).buf(2, out).threads(100, 1, 1, 32, 1, 1).run();
    CHECK(e.find("kernel 'divide': integer division by zero (thread position (61, 0, 0))") != std::string::npos,
          "integer division by zero fails the dispatch: %s", e.c_str());
    den[61] = 1;
    e = Dispatch(f).buf(0, num).buf(1, den).buf(2, out).threads(100, 1, 1, 32, 1, 1).run();
    CHECK(e.empty() && out[99] == 7, "the same kernel without the zero runs %s", e.c_str());
    mgsim_function_release(f);
  }
  // A function declared but never defined: a link error naming it, not a dlopen failure.
  {
    Lib undefined(R"(
#include <metal_stdlib>
using namespace metal;
float helper(float x);
kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = helper(float(i)); }
)");
    CHECK(!undefined.lib && undefined.error.find("[mgsim compile] ") == 0 &&
              undefined.error.find("undefined reference to ") != std::string::npos &&
              undefined.error.find("helper(float)") != std::string::npos &&
              undefined.error.find(".tmp.") == std::string::npos,
          "an undefined function is a compile error naming it: %s", undefined.error.c_str());
  }
  std::string exe = getenv("MSLSIM_TEST_EXE") ? getenv("MSLSIM_TEST_EXE") : argv[0];
  // A missing compiler is an error message (checked in a child: the compiler is resolved once).
  {
    std::string cmd = "MG_SIM_CXX=/nonexistent/c++ '" + exe + "' child nocompiler";
    FILE *p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[512];
    while (p && fgets(buf, sizeof buf, p)) out += buf;
    int status = p ? pclose(p) : -1;
    CHECK(status == 0 && out.find("[mgsim compile] C++ compiler '/nonexistent/c++' not found") == 0,
          "a missing compiler is a compile error: %s", out.c_str());
  }
  // Faults outside kernel code: the default action (a SIGSEGV death), or the previous handler.
  for (const char *mode : {"default", "chained"}) {
    pid_t pid = fork();
    if (pid == 0) {
      execl(exe.c_str(), exe.c_str(), "child", mode, static_cast<char *>(nullptr));
      _exit(99);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    bool ok = std::string(mode) == "default" ? WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV
                                             : WIFEXITED(status) && WEXITSTATUS(status) == 42;
    CHECK(ok, "a host-code fault after dispatches goes to the %s handler (status 0x%x)",
          std::string(mode) == "default" ? "default" : "previously installed", status);
  }
  return finish();
}
