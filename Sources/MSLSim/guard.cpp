// Fault recovery for simulated kernels: per-thread records, alternate signal stacks, the handler
// and its chaining to whatever handler was there before.
#include "guard.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <sstream>

namespace mgsim {
namespace {

// Static storage: the handler may read any record at any time, so records are never freed, only
// released (tid 0) and reused.
constexpr size_t kMaxRecords = 1024;
FaultRecord g_records[kMaxRecords];
std::atomic<size_t> g_records_used{0};  // high-water mark of claimed indices

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
constexpr int kSignalCount = int(sizeof(kSignals) / sizeof(kSignals[0]));
struct sigaction g_previous[kSignalCount];
std::mutex g_install_mu;
std::atomic<pid_t> g_chaining_tid{0};

constexpr size_t kAltStackSize = 64 * 1024;

pid_t current_tid() { return pid_t(syscall(SYS_gettid)); }

int signal_slot(int sig) {
  for (int k = 0; k < kSignalCount; ++k)
    if (kSignals[k] == sig) return k;
  return -1;
}

// Passes a fault that is not a kernel's on to the previously installed handler, or applies the
// default action.
void chain(int sig, siginfo_t *info, void *context) {
  const int k = signal_slot(sig);
  if (k < 0) return;
  const pid_t me = current_tid();
  pid_t none = 0;
  const bool guarded = g_chaining_tid.compare_exchange_strong(none, me);
  if (!guarded && none == me) {
    // The previous handler passed the signal back to us: stop the cycle with the default action.
    signal(sig, SIG_DFL);
    return;
  }
  const struct sigaction prev = g_previous[k];
  const bool asynchronous = info && info->si_code <= 0;  // kill(), sigqueue(), tgkill()
  if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction) {
    prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler) {
    prev.sa_handler(sig);
  } else if (!(prev.sa_handler == SIG_IGN && asynchronous)) {
    // Default action: a synchronous fault re-executes and takes it; a sent signal is re-raised
    // (blocked until this handler returns).
    signal(sig, SIG_DFL);
    if (asynchronous) raise(sig);
  }
  if (guarded) g_chaining_tid.store(0);
}

// The calling thread's record, or null: a scan of plain atomics, safe in a signal handler.
FaultRecord *own_record() {
  const pid_t me = current_tid();
  const size_t used = g_records_used.load(std::memory_order_acquire);
  for (size_t i = 0; i < used && i < kMaxRecords; ++i)
    if (g_records[i].tid.load(std::memory_order_relaxed) == me) return &g_records[i];
  return nullptr;
}

// Leaves kernel code as a fault does: records the cause and the thread's grid position, then jumps
// back to the dispatch loop that armed the record.
[[noreturn]] void leave_kernel(FaultRecord &r, int sig, int code, void *address) {
  r.active = 0;
  r.signo = sig;
  r.code = code;
  r.address = address;
  const abi::thread_attrs *a = r.current;
  r.position_known = a != nullptr;
  if (a) {
    r.position[0] = a->grid[0];
    r.position[1] = a->grid[1];
    r.position[2] = a->grid[2];
  }
  siglongjmp(r.jump, 1);
}

void on_fault(int sig, siginfo_t *info, void *context) {
  const int saved_errno = errno;
  if (info && info->si_code > 0) {  // a fault raised by an instruction, not a sent signal
    FaultRecord *r = own_record();
    if (r && r->active) leave_kernel(*r, sig, info->si_code, info->si_addr);
  }
  errno = saved_errno;
  chain(sig, info, context);
}

std::atomic<int> g_cancel_signal{0};  // 0: not chosen yet, -1: none free

// The watchdog's signal: stops the thread only if it is running kernel code of the dispatch the
// watchdog cancelled (asynchronous, so it may land anywhere in that code, as a fault may).
void on_cancel(int sig, siginfo_t *, void *) {
  const int saved_errno = errno;
  FaultRecord *r = own_record();
  if (r && r->active) {
    const uint64_t serial = r->dispatch_serial.load(std::memory_order_relaxed);
    if (serial != 0 && r->cancel_serial.load(std::memory_order_relaxed) == serial) leave_kernel(*r, sig, 0, nullptr);
  }
  errno = saved_errno;
}

// Releases the thread's record when it exits.
struct RecordOwner {
  FaultRecord *record = nullptr;
  ~RecordOwner() {
    if (!record) return;
    record->active = 0;
    record->current = nullptr;
    if (record->own_altstack) {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
      munmap(record->own_altstack, record->own_altstack_size);
      record->own_altstack = nullptr;
    }
    record->tid.store(0, std::memory_order_release);
  }
};
thread_local RecordOwner t_owner;

}  // namespace

FaultRecord *this_thread_fault_record() {
  if (t_owner.record) return t_owner.record;
  const pid_t me = current_tid();
  FaultRecord *r = nullptr;
  for (size_t i = 0; i < kMaxRecords && !r; ++i) {
    pid_t expected = 0;
    if (g_records[i].tid.compare_exchange_strong(expected, me)) {
      r = &g_records[i];
      size_t used = g_records_used.load();
      while (used < i + 1 && !g_records_used.compare_exchange_weak(used, i + 1)) {
      }
    }
  }
  if (!r) return nullptr;
  r->active = 0;
  r->current = nullptr;
  r->dispatch_serial.store(0, std::memory_order_relaxed);
  r->stack_lo = r->stack_hi = 0;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void *addr = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      r->stack_lo = reinterpret_cast<uintptr_t>(addr);
      r->stack_hi = r->stack_lo + size;
    }
    pthread_attr_destroy(&attr);
  }
  // The handler must run somewhere when the fault is a stack overflow: give the thread an
  // alternate signal stack unless it already has one.
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE)) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t total = kAltStackSize + page;
    void *p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      mprotect(p, page, PROT_NONE);
      stack_t ss{};
      ss.ss_sp = static_cast<char *>(p) + page;
      ss.ss_size = kAltStackSize;
      if (sigaltstack(&ss, nullptr) == 0) {
        r->own_altstack = static_cast<char *>(p);
        r->own_altstack_size = total;
      } else {
        munmap(p, total);
      }
    }
  }
  t_owner.record = r;
  return r;
}

void ensure_fault_handlers() {
  // Checked at most every 50 ms: querying four handlers costs more than a small dispatch.
  using clock = std::chrono::steady_clock;
  static std::atomic<int64_t> last_check{0};
  const int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock::now().time_since_epoch()).count() + 1;  // never 0
  const int64_t last = last_check.load(std::memory_order_relaxed);
  if (last != 0 && now - last < 50) return;
  std::lock_guard<std::mutex> lock(g_install_mu);
  last_check.store(now, std::memory_order_relaxed);
  for (int k = 0; k < kSignalCount; ++k) {
    struct sigaction now;
    if (sigaction(kSignals[k], nullptr, &now) != 0) continue;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == &on_fault) continue;
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = &on_fault;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    g_previous[k] = now;
    sigaction(kSignals[k], &ours, nullptr);
  }
}

int cancel_signal() {
  int sig = g_cancel_signal.load(std::memory_order_acquire);
  if (sig != 0) return sig;
  std::lock_guard<std::mutex> lock(g_install_mu);
  sig = g_cancel_signal.load(std::memory_order_relaxed);
  if (sig != 0) return sig;
  sig = -1;
  // From the top of the real-time range down: libraries that take one usually start at SIGRTMIN.
  for (int s = SIGRTMAX; s >= SIGRTMIN; --s) {
    struct sigaction now;
    if (sigaction(s, nullptr, &now) != 0) continue;
    if ((now.sa_flags & SA_SIGINFO) || now.sa_handler != SIG_DFL) continue;  // someone's
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = &on_cancel;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&ours.sa_mask);
    if (sigaction(s, &ours, nullptr) == 0) {
      sig = s;
      break;
    }
  }
  g_cancel_signal.store(sig, std::memory_order_release);
  return sig;
}

void interrupt_thread(pid_t tid) {
  const int sig = cancel_signal();
  if (sig > 0 && tid > 0) syscall(SYS_tgkill, getpid(), tid, sig);
}

void unblock_cancel_signal() {
  const int sig = cancel_signal();
  if (sig <= 0) return;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

void unblock_fault_signal(const FaultRecord &r) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, r.signo);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

std::string describe_fault(const FaultRecord &r, const char *kernel, char *const *lane_stacks, size_t n_stacks,
                           size_t stack_size, size_t guard, bool in_fiber) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(r.address);
  std::ostringstream where;
  if (r.position_known)
    where << "thread position (" << r.position[0] << ", " << r.position[1] << ", " << r.position[2] << ")";
  else
    where << "thread position unknown";
  std::ostringstream m;
  m << "kernel '" << kernel << "': ";
  if (r.signo == SIGSEGV || r.signo == SIGBUS) {
    if (in_fiber) {
      for (size_t i = 0; i < n_stacks; ++i) {
        const uintptr_t lo = reinterpret_cast<uintptr_t>(lane_stacks[i]);
        if (addr < lo && addr >= lo - guard) {
          m << "stack overflow in a lane of kernel " << kernel << " (" << where.str() << "; MG_SIM_STACK_KB raises the "
            << stack_size / 1024 << " KiB limit)";
          return m.str();
        }
      }
    } else if (r.stack_lo && addr < r.stack_lo + guard && addr + 1024 * 1024 >= r.stack_lo) {
      m << "stack overflow (" << where.str() << "): the kernel's local variables exceed the "
        << (r.stack_hi - r.stack_lo) / 1024 << " KiB stack of the simulator thread running it";
      return m.str();
    }
    m << (r.signo == SIGBUS ? "bus error (unmapped or misaligned memory)" : "invalid memory access") << " at address 0x"
      << std::hex << addr << std::dec << " (" << where.str() << "); run with MG_SIM_CHECK=1 to find the access";
  } else if (r.signo == SIGFPE) {
    m << (r.code == FPE_INTDIV ? "integer division by zero" : r.code == FPE_INTOVF ? "integer overflow trap"
                                                                                    : "arithmetic exception")
      << " (" << where.str() << "); a GPU would return an undefined value instead";
  } else {
    m << "illegal instruction at 0x" << std::hex << addr << std::dec << " (" << where.str()
      << "); the compiler emits one where behaviour is undefined, e.g. a non-void function that ends "
         "without returning a value";
  }
  return m.str();
}

}  // namespace mgsim
