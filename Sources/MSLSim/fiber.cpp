// Cooperative context switch. x86-64 (System V) and aarch64 (AAPCS64) save the callee-saved
// registers; other targets use ucontext.
//
// The floating-point control state (x86 MXCSR and x87 control word, aarch64 FPCR) is not switched:
// every fiber runs simulator kernel code on one OS thread, and nothing in MSL changes rounding or
// exception modes, so it is the same in every context. Saving it cost most of a switch
// (stmxcsr/ldmxcsr/fnstcw/fldcw are microcoded).
#include "fiber.h"

#include <cstdint>
#include <cstring>

#if !MGSIM_ASM_FIBERS
#include <ucontext.h>

#include <cstdlib>
#endif

#if MGSIM_ASM_FIBERS
extern "C" void mgsim_fiber_trampoline();

#if defined(__x86_64__)
// Saves rbp, rbx, r12–r15, then swaps stacks.
asm(R"(
  .text
  .p2align 4
  .globl mgsim_fiber_switch
  .hidden mgsim_fiber_switch
  .type mgsim_fiber_switch,@function
mgsim_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size mgsim_fiber_switch, .-mgsim_fiber_switch

  .p2align 4
  .globl mgsim_fiber_trampoline
  .hidden mgsim_fiber_trampoline
  .type mgsim_fiber_trampoline,@function
mgsim_fiber_trampoline:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size mgsim_fiber_trampoline, .-mgsim_fiber_trampoline
)");
#else
// Saves x19–x30 and d8–d15, then swaps stacks.
asm(R"(
  .text
  .p2align 4
  .globl mgsim_fiber_switch
  .hidden mgsim_fiber_switch
  .type mgsim_fiber_switch,%function
mgsim_fiber_switch:
  sub sp, sp, #176
  stp x19, x20, [sp, #0]
  stp x21, x22, [sp, #16]
  stp x23, x24, [sp, #32]
  stp x25, x26, [sp, #48]
  stp x27, x28, [sp, #64]
  stp x29, x30, [sp, #80]
  stp d8, d9, [sp, #96]
  stp d10, d11, [sp, #112]
  stp d12, d13, [sp, #128]
  stp d14, d15, [sp, #144]
  mov x9, sp
  str x9, [x0]
  mov sp, x1
  ldp x19, x20, [sp, #0]
  ldp x21, x22, [sp, #16]
  ldp x23, x24, [sp, #32]
  ldp x25, x26, [sp, #48]
  ldp x27, x28, [sp, #64]
  ldp x29, x30, [sp, #80]
  ldp d8, d9, [sp, #96]
  ldp d10, d11, [sp, #112]
  ldp d12, d13, [sp, #128]
  ldp d14, d15, [sp, #144]
  add sp, sp, #176
  ret
  .size mgsim_fiber_switch, .-mgsim_fiber_switch

  .p2align 4
  .globl mgsim_fiber_trampoline
  .hidden mgsim_fiber_trampoline
  .type mgsim_fiber_trampoline,%function
mgsim_fiber_trampoline:
  mov x0, x19
  blr x20
  brk #0
  .size mgsim_fiber_trampoline, .-mgsim_fiber_trampoline
)");
#endif
#endif

namespace mgsim {

#if MGSIM_ASM_FIBERS

void fiber_init(FiberContext &ctx, char *stack_lo, size_t size, void (*fn)(void *), void *arg) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack_lo) + size) & ~uintptr_t(15);
  uint64_t *sp = reinterpret_cast<uint64_t *>(top);
#if defined(__x86_64__)
  // Frame popped by mgsim_fiber_switch: r15, r14, r13 (fn), r12 (arg), rbx, rbp, return address
  // (the trampoline). After `ret`, rsp is the 16-aligned top, as before a call.
  *--sp = reinterpret_cast<uint64_t>(&mgsim_fiber_trampoline);
  *--sp = 0;                                   // rbp
  *--sp = 0;                                   // rbx
  *--sp = reinterpret_cast<uint64_t>(arg);     // r12
  *--sp = reinterpret_cast<uint64_t>(fn);      // r13
  *--sp = 0;                                   // r14
  *--sp = 0;                                   // r15
#else
  sp -= 22;  // 176 bytes
  std::memset(sp, 0, 176);
  sp[0] = reinterpret_cast<uint64_t>(arg);                         // x19
  sp[1] = reinterpret_cast<uint64_t>(fn);                          // x20
  sp[10] = 0;                                                      // x29
  sp[11] = reinterpret_cast<uint64_t>(&mgsim_fiber_trampoline);    // x30
#endif
  ctx.sp = sp;
}

void fiber_destroy(FiberContext &) {}
const char *fiber_backend() {
#if defined(__x86_64__)
  return "x86-64 assembly";
#else
  return "aarch64 assembly";
#endif
}

#else

namespace {
struct Start {
  void (*fn)(void *);
  void *arg;
};
void uc_entry(unsigned lo, unsigned hi) {
  Start *s = reinterpret_cast<Start *>((uintptr_t(hi) << 32) | uintptr_t(lo));
  s->fn(s->arg);
  abort();  // a lane never returns: it switches back to the scheduler when it exits
}
}  // namespace

void fiber_init(FiberContext &ctx, char *stack_lo, size_t size, void (*fn)(void *), void *arg) {
  if (!ctx.uc) ctx.uc = new ucontext_t();
  ucontext_t *uc = static_cast<ucontext_t *>(ctx.uc);
  getcontext(uc);
  uc->uc_stack.ss_sp = stack_lo;
  uc->uc_stack.ss_size = size - sizeof(Start) - 16;
  uc->uc_link = nullptr;
  Start *s = reinterpret_cast<Start *>(stack_lo + size - sizeof(Start) - 8);
  s->fn = fn;
  s->arg = arg;
  uintptr_t p = reinterpret_cast<uintptr_t>(s);
  makecontext(uc, reinterpret_cast<void (*)()>(&uc_entry), 2, unsigned(p & 0xffffffffu), unsigned(p >> 32));
}
void fiber_switch(FiberContext &from, FiberContext &to) {
  if (!from.uc) from.uc = new ucontext_t();
  swapcontext(static_cast<ucontext_t *>(from.uc), static_cast<ucontext_t *>(to.uc));
}
void fiber_destroy(FiberContext &ctx) {
  delete static_cast<ucontext_t *>(ctx.uc);
  ctx.uc = nullptr;
}
const char *fiber_backend() { return "ucontext"; }

#endif

}  // namespace mgsim
