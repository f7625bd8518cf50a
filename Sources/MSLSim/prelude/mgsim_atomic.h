// mgsim_atomic.h — metal_atomic: atomic<T> and the atomic_*_explicit functions, on device and
// threadgroup memory.
//
// Threadgroups run concurrently on several OS threads, so these are real atomics (GCC __atomic
// builtins; float add/sub/min/max by compare-exchange loops). Every operation is sequentially
// consistent, which is a valid implementation of each MSL memory order. compare_exchange_weak never
// fails spuriously here. Memory is reached only through mgsim_resolve(p, 1, write), so checked mode sees
// every access.
#ifndef MGSIM_ATOMIC_H
#define MGSIM_ATOMIC_H

#include "mgsim_math.h"

namespace metal {

enum memory_order {
  memory_order_relaxed,
  memory_order_acquire,
  memory_order_release,
  memory_order_acq_rel,
  memory_order_seq_cst
};
enum thread_scope {
  thread_scope_thread,
  thread_scope_simdgroup,
  thread_scope_threadgroup,
  thread_scope_device,
  thread_scope_system
};

// Trivially constructible and the size of T: threadgroup memory holding atomics is uninitialised,
// and device buffers are reinterpreted as arrays of atomic<T>.
//
// What Metal defines (MSL §6.15.4), and so what compiles here:
//   atomic_int, atomic_uint   load, store, exchange, compare_exchange_weak, fetch_add / sub / and /
//                             or / xor / min / max
//   atomic_bool               load, store, exchange, compare_exchange_weak
//   atomic_float (Metal 3)    load, store, exchange, compare_exchange_weak, fetch_add / sub; device
//                             memory only
//   atomic_ulong (Metal 2.4)  atomic_max_explicit / atomic_min_explicit (no fetch: they return
//                             void); device memory only
// Device-only types are rejected in threadgroup declarations by the translator.
template <class T>
struct atomic {
  static_assert(std::is_same<T, int>::value || std::is_same<T, uint>::value || std::is_same<T, float>::value ||
                    std::is_same<T, bool>::value || std::is_same<T, ulong>::value,
                "MSL: atomic<T> supports int, uint, float, bool and ulong");
  static_assert(!std::is_same<T, float>::value || ::mgsim::version_at_least<T>(300),
                "MSL: atomic_float requires Metal 3.0 or later");
  static_assert(!std::is_same<T, ulong>::value || ::mgsim::version_at_least<T>(240),
                "MSL: atomic_ulong requires Metal 2.4 or later");
  T mg_v;
  atomic() = default;
  atomic(const atomic &) = delete;
  atomic &operator=(const atomic &) = delete;
};
// `threadgroup atomic<T> x;` with T a template parameter: the translator spells the type this way,
// which is atomic<T> once T is known to exist in threadgroup memory.
template <class T>
struct mgsim_threadgroup_atomic_of {
  static_assert(!std::is_same<T, float>::value && !std::is_same<T, ulong>::value,
                "MSL: atomic_float and atomic_ulong exist in device memory only; threadgroup memory has "
                "atomic_int, atomic_uint and atomic_bool (MSL 6.15.4)");
  using type = atomic<T>;
};
template <class T>
using mgsim_threadgroup_atomic = typename mgsim_threadgroup_atomic_of<T>::type;

typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<float> atomic_float;
typedef atomic<bool> atomic_bool;
typedef atomic<ulong> atomic_ulong;

}  // namespace metal

namespace mgsim {
namespace lang {
namespace atomics {

template <class T>
struct is_atomic : std::false_type {};
template <class T>
struct is_atomic<::metal::atomic<T>> : std::true_type {};

// The raw pointer behind a pointer-like argument (unqualified resolve: ADL finds the execution
// layer's checked-pointer overload; mgsim::mgsim_resolve handles raw pointers).
template <class P>
auto resolved(const P &p, bool write) -> decltype(mgsim_resolve(p, size_t(1), write)) {
  return mgsim_resolve(p, size_t(1), write);
}
template <class P>
using resolved_t = decltype(resolved(std::declval<const P &>(), true));

// P must resolve to (cv) atomic<T>*; value_type is T.
template <class P, class = void>
struct target {};
template <class P>
struct target<P, std::enable_if_t<std::is_pointer<resolved_t<P>>::value &&
                                  is_atomic<std::remove_cv_t<std::remove_pointer_t<resolved_t<P>>>>::value>> {
  using value_type = std::remove_cv_t<decltype(std::declval<std::remove_pointer_t<resolved_t<P>>>().mg_v)>;
};

enum rmw_op { r_add, r_sub, r_and, r_or, r_xor, r_min, r_max };

template <int Op, class T>
constexpr T combine(T a, T b) {
  if constexpr (Op == r_add) return T(a + b);
  else if constexpr (Op == r_sub) return T(a - b);
  else if constexpr (Op == r_min) return ::mgsim::lang::math::fn_min::call(a, b);
  else return ::mgsim::lang::math::fn_max::call(a, b);
}

// The fetch-and-modify functions exist for atomic_int and atomic_uint; atomic_float has fetch_add
// and fetch_sub only (MSL §6.15.4.5).
template <int Op, class V, class T>
inline T rmw(V *p, T v) {
  static_assert(!std::is_same<T, bool>::value,
                "MSL: atomic<bool> supports only load, store, exchange and compare_exchange");
  static_assert(!(std::is_same<T, float>::value && (Op == r_and || Op == r_or || Op == r_xor)),
                "MSL: atomic<float> has no bitwise operations");
  static_assert(!(std::is_same<T, float>::value && (Op == r_min || Op == r_max)),
                "MSL: atomic<float> has no fetch_min / fetch_max (only fetch_add and fetch_sub, MSL 6.15.4.5)");
  static_assert(!std::is_same<T, ulong>::value,
                "MSL: atomic<ulong> has no fetch-and-modify functions; its only operations are "
                "atomic_max_explicit and atomic_min_explicit (MSL 6.15.4.6)");
  if constexpr (std::is_integral<T>::value && Op == r_add) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
  } else if constexpr (std::is_integral<T>::value && Op == r_sub) {
    return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST);
  } else if constexpr (Op == r_and) {
    return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
  } else if constexpr (Op == r_or) {
    return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
  } else if constexpr (Op == r_xor) {
    return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);
  } else {  // float add/sub, and min/max: compare-exchange loop
    T old;
    __atomic_load(p, &old, __ATOMIC_SEQ_CST);
    T desired = combine<Op>(old, v);
    while (!__atomic_compare_exchange(p, &old, &desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      desired = combine<Op>(old, v);
    return old;
  }
}

}  // namespace atomics
}  // namespace lang
}  // namespace mgsim

namespace metal {

namespace mga = ::mgsim::lang::atomics;

template <class P, class T = typename mga::target<P>::value_type>
inline T atomic_load_explicit(P object, memory_order) {
  static_assert(!std::is_same<T, ulong>::value,
                "MSL: atomic<ulong> supports only atomic_max_explicit and atomic_min_explicit (MSL 6.15.4.6)");
  auto *a = mga::resolved(object, false);
  T r;
  __atomic_load(&a->mg_v, &r, __ATOMIC_SEQ_CST);
  return r;
}

template <class P, class U, class T = typename mga::target<P>::value_type,
          std::enable_if_t<std::is_convertible<U, T>::value, int> = 0>
inline void atomic_store_explicit(P object, U desired, memory_order) {
  static_assert(!std::is_same<T, ulong>::value,
                "MSL: atomic<ulong> supports only atomic_max_explicit and atomic_min_explicit (MSL 6.15.4.6)");
  auto *a = mga::resolved(object, true);
  T v = T(desired);
  __atomic_store(&a->mg_v, &v, __ATOMIC_SEQ_CST);
}

template <class P, class U, class T = typename mga::target<P>::value_type,
          std::enable_if_t<std::is_convertible<U, T>::value, int> = 0>
inline T atomic_exchange_explicit(P object, U desired, memory_order) {
  static_assert(!std::is_same<T, ulong>::value,
                "MSL: atomic<ulong> supports only atomic_max_explicit and atomic_min_explicit (MSL 6.15.4.6)");
  auto *a = mga::resolved(object, true);
  T v = T(desired), r;
  __atomic_exchange(&a->mg_v, &v, &r, __ATOMIC_SEQ_CST);
  return r;
}

// On failure, *expected receives the current value. Compares bit patterns (as the hardware does).
template <class P, class E, class U, class T = typename mga::target<P>::value_type,
          std::enable_if_t<std::is_convertible<U, T>::value, int> = 0>
inline bool atomic_compare_exchange_weak_explicit(P object, E expected, U desired, memory_order, memory_order) {
  static_assert(!std::is_same<T, ulong>::value,
                "MSL: atomic<ulong> supports only atomic_max_explicit and atomic_min_explicit (MSL 6.15.4.6)");
  auto *a = mga::resolved(object, true);
  auto *e = mga::resolved(expected, true);
  static_assert(std::is_same<std::remove_cv_t<std::remove_pointer_t<decltype(e)>>, T>::value,
                "atomic_compare_exchange_weak_explicit: `expected` must point to the atomic's value type");
  T want = *e, v = T(desired);
  const bool ok = __atomic_compare_exchange(&a->mg_v, &want, &v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  if (!ok) *e = want;
  return ok;
}

#define MGSIM_ATOMIC_FETCH(NAME, OP)                                                               \
  template <class P, class U, class T = typename mga::target<P>::value_type,                       \
            std::enable_if_t<std::is_convertible<U, T>::value, int> = 0>                           \
  inline T atomic_fetch_##NAME##_explicit(P object, U operand, memory_order) {                     \
    auto *a = mga::resolved(object, true);                                                         \
    return mga::rmw<mga::OP>(&a->mg_v, T(operand));                                                \
  }
MGSIM_ATOMIC_FETCH(add, r_add)
MGSIM_ATOMIC_FETCH(sub, r_sub)
MGSIM_ATOMIC_FETCH(and, r_and)
MGSIM_ATOMIC_FETCH(or, r_or)
MGSIM_ATOMIC_FETCH(xor, r_xor)
MGSIM_ATOMIC_FETCH(min, r_min)
MGSIM_ATOMIC_FETCH(max, r_max)
#undef MGSIM_ATOMIC_FETCH

// The 64-bit modify functions (MSL §6.15.4.6): atomic_ulong only, device memory only, no result.
#define MGSIM_ATOMIC_MODIFY(NAME, OP)                                                              \
  template <class P, class U, class T = typename mga::target<P>::value_type,                       \
            std::enable_if_t<std::is_convertible<U, T>::value, int> = 0>                           \
  inline void atomic_##NAME##_explicit(P object, U operand, memory_order) {                        \
    static_assert(std::is_same<T, ulong>::value,                                                   \
                  "MSL: atomic_" #NAME "_explicit is the 64-bit modify function, defined for "     \
                  "atomic_ulong only (for atomic_int / atomic_uint use atomic_fetch_" #NAME        \
                  "_explicit)");                                                                   \
    auto *a = mga::resolved(object, true);                                                         \
    T old;                                                                                         \
    __atomic_load(&a->mg_v, &old, __ATOMIC_SEQ_CST);                                               \
    T desired = mga::combine<mga::OP>(old, T(operand));                                            \
    while (!__atomic_compare_exchange(&a->mg_v, &old, &desired, false, __ATOMIC_SEQ_CST,           \
                                      __ATOMIC_SEQ_CST))                                           \
      desired = mga::combine<mga::OP>(old, T(operand));                                            \
  }
MGSIM_ATOMIC_MODIFY(min, r_min)
MGSIM_ATOMIC_MODIFY(max, r_max)
#undef MGSIM_ATOMIC_MODIFY

// The fence's flags (metal::mem_flags) belong to the execution layer; any flags type is accepted.
template <class Flags>
inline void atomic_thread_fence(Flags, memory_order, thread_scope = thread_scope_device) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

}  // namespace metal

#endif  // MGSIM_ATOMIC_H
