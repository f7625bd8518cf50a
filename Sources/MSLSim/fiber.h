// Minimal cooperative context switch for lanes (private to MSLSim).
#ifndef MGSIM_FIBER_H
#define MGSIM_FIBER_H

#include <cstddef>

namespace mgsim {

// A suspended execution context: its saved stack pointer (assembly backends) or ucontext.
struct FiberContext {
  void *sp = nullptr;
  void *uc = nullptr;  // ucontext_t* for the fallback backend
};

// Prepares `ctx` to start running fn(arg) on [stack_lo, stack_lo + size).
void fiber_init(FiberContext &ctx, char *stack_lo, size_t size, void (*fn)(void *), void *arg);
#if (defined(__x86_64__) || defined(__aarch64__)) && defined(__ELF__)
#define MGSIM_ASM_FIBERS 1
}  // namespace mgsim
extern "C" void mgsim_fiber_switch(void **save_sp, void *to_sp);
namespace mgsim {
// Saves the current context into `from` and resumes `to`.
inline void fiber_switch(FiberContext &from, FiberContext &to) { mgsim_fiber_switch(&from.sp, to.sp); }
#else
// Saves the current context into `from` and resumes `to`.
void fiber_switch(FiberContext &from, FiberContext &to);
#endif
// Releases backend resources held by a context (ucontext fallback only).
void fiber_destroy(FiberContext &ctx);
const char *fiber_backend();

}  // namespace mgsim

#endif
