// Fault recovery for simulated kernels (private to MSLSim).
//
// A kernel that dereferences a wild pointer, overflows its stack or divides an integer by zero
// must fail its dispatch, not kill the host process (a GPU returns garbage, never crashes the
// CPU side). Every thread that runs kernel code owns a FaultRecord; while it is `active`, a
// SIGSEGV, SIGBUS, SIGFPE or SIGILL on that thread records what happened and siglongjmps back to
// the dispatch loop that armed it. Faults anywhere else go to the handler that was installed
// before ours (or the default action), exactly as if the simulator were not there.
#ifndef MGSIM_GUARD_H
#define MGSIM_GUARD_H

#include <setjmp.h>
#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#define MGSIM_ABI_ONLY
#include "prelude/mgsim_exec.h"
#undef MGSIM_ABI_ONLY

namespace mgsim {

struct FaultRecord {
  std::atomic<pid_t> tid{0};          // owning thread (0: free)
  volatile sig_atomic_t active = 0;   // kernel code may run on this thread now
  sigjmp_buf jump;                    // where a fault resumes (armed by the dispatch loop)
  // Where the kernel code is: the attributes of the thread it runs, for the report. Plain loops
  // publish theirs through abi::group::current; the fiber scheduler sets it at every switch.
  const abi::thread_attrs *current = nullptr;
  // Filled in by the signal handler.
  volatile int signo = 0;
  volatile int code = 0;
  void *volatile address = nullptr;
  uint32_t position[3] = {0, 0, 0};
  volatile bool position_known = false;
  // The dispatch whose kernel code this thread runs (0: none), and the dispatch the watchdog
  // cancelled: when they are equal, the cancel signal stops the thread like a fault does.
  std::atomic<uint64_t> dispatch_serial{0};
  std::atomic<uint64_t> cancel_serial{0};
  // The thread's own stack (plain kernels run on it) and the alternate signal stack, ours or not.
  uintptr_t stack_lo = 0, stack_hi = 0;
  char *own_altstack = nullptr;
  size_t own_altstack_size = 0;
};

// The calling thread's record, claimed (with an alternate signal stack if the thread has none)
// on first use and released when the thread exits. Null if every record is taken.
FaultRecord *this_thread_fault_record();

// Installs the fault handlers, or re-installs them if something replaced them since (the
// replacement then becomes the handler faults outside kernels are passed to).
void ensure_fault_handlers();

// After a recovered fault: the handler returned by siglongjmp, leaving the signal blocked.
void unblock_fault_signal(const FaultRecord &r);

// The signal the dispatch watchdog sends to stop a thread that runs a cancelled dispatch's kernel
// code: a real-time signal nothing else in the process handles, chosen (and its handler installed)
// on first use; -1 if none was free. Its handler siglongjmps like a fault's when the receiving
// thread's record has active kernel code of the cancelled dispatch, and does nothing otherwise.
int cancel_signal();
// Sends the cancel signal to thread `tid` of this process (unblocking it first on the calling
// thread is the receiver's business: dispatch threads call unblock_cancel_signal()).
void interrupt_thread(pid_t tid);
void unblock_cancel_signal();

// Describes a recovered fault. `lane_stacks` / `stack_size` / `guard` locate the thread's fiber
// stacks (a fault in the guard region below one is a lane's stack overflow).
std::string describe_fault(const FaultRecord &r, const char *kernel, char *const *lane_stacks, size_t n_stacks,
                           size_t stack_size, size_t guard, bool in_fiber);

}  // namespace mgsim

#endif
