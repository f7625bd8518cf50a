// mgsim_wi.h — work-item mode: the runtime side of the translator's work-item form
// (Sources/MSLSim/workitem.cpp).
//
// A kernel that uses barriers, simd collectives or simdgroup matrices is split by the translator at
// those operations ("syncs"). One call runs a whole threadgroup: the code between two syncs runs as
// a loop over the active lanes (`each`), values that live across a sync are kept per lane in arena
// storage (`lanes<T>`), and each sync runs once over every lane's values — a collective once per
// simdgroup, a simdgroup-matrix operation once per simdgroup on the host's SIMD/FMA units, a barrier
// once per threadgroup. Control flow that contains syncs runs with an active mask per simdgroup:
// `if` splits the mask, loops run while any lane is in them, `return` / `break` / `continue` take a
// lane out of the mask until the function / loop / iteration ends. Collectives see exactly the
// active lanes, as on a GPU after divergence.
//
// Helper functions that contain syncs get a work-item variant too (mgwi_<name>); the translator
// picks the overload a call would pick through a "probe" declaration with the same parameters,
// whose return type names the variant (ov<ID, template arguments>).
#ifndef MGSIM_WI_H
#define MGSIM_WI_H

#include <new>

#include "mgsim_exec.h"

#define MGWI_INL __attribute__((always_inline))
// each() publishes lane attributes unless told otherwise; generated code says which (MGWI_TRACK).
#define MGWI_TRACK_DEFAULT true
// The generated form of each(): `MGWI_EACH { per-lane code using mgwi_l } MGWI_EACH_END` runs the
// code for every active lane of the work-item function's context `mgwi_c`, in lane order, as a
// plain loop (no closure per region for the compiler to build and inline).
#define MGWI_EACH                                                                      \
  for (uint32_t mgwi_s = 0; mgwi_s < mgwi_c.nsg; ++mgwi_s)                             \
    for (uint32_t mgwi_k = mgwi_c.active[mgwi_s]; mgwi_k; mgwi_k &= mgwi_k - 1) {      \
      const uint32_t mgwi_l = (mgwi_s << 5) | uint32_t(__builtin_ctz(mgwi_k));         \
      mgwi_c.cur = mgwi_l;                                                             \
      if (MGWI_TRACK) *mgwi_c.tls_attrs = &mgwi_c.attrs[mgwi_l];
#define MGWI_EACH_END }

namespace mgsim {
namespace wi {

using ctx = abi::wi_ctx;

// The overload tag a probe returns: the function's id, its template arguments (non-type ones as
// std::integral_constant), from which the variant deduces them, and its parameters' storage types
// (ref_param<T> for a reference parameter T&), into which the caller converts its arguments.
template <class... T>
struct targs {};
template <class T>
struct ref_param {};
template <class... P>
struct params {};
// RO: bit i set when the function never modifies by-value parameter i (the variant reads it
// through a const view: the caller may pass its own storage, or one value for every lane).
template <unsigned ID, class TA, class PS, unsigned long long RO = 0>
struct ov {};

template <class O, unsigned I>
struct param_of;
template <unsigned ID, class TA, class... P, unsigned long long RO, unsigned I>
struct param_of<ov<ID, TA, params<P...>, RO>, I> {
  using type = std::tuple_element_t<I, std::tuple<P...>>;
  static constexpr bool read_only = I < 64 && ((RO >> I) & 1u) != 0;
};
template <class P>
struct storage_of {
  using type = P;
};
template <class T>
struct storage_of<ref_param<T>> {
  using type = T *;
};
// The per-lane storage of parameter I of the overload O names.
template <class O, unsigned I>
using param_t = typename storage_of<typename param_of<O, I>::type>::type;

MGSIM_ALWAYS_INLINE uint32_t bit(uint32_t l) { return 1u << (l & 31u); }

template <class T>
struct sg_uniform;
// Parameter I of O is passed by value and never modified by the function (and is no simdgroup
// matrix, whose storage is per simdgroup).
template <class O, unsigned I>
inline constexpr bool by_ro = param_of<O, I>::read_only &&
                              std::is_same<typename param_of<O, I>::type, param_t<O, I>>::value &&
                              !sg_uniform<param_t<O, I>>::value;

// Runs f(lane) for every active lane, in lane order. Track (the translation unit's MGWI_TRACK:
// checked mode, or a kernel that asks for its lane id) publishes each lane's attributes as it runs.
template <bool Track = MGWI_TRACK_DEFAULT, class F>
MGSIM_ALWAYS_INLINE void each(ctx &c, F &&f) {
  const uint32_t nsg = c.nsg;
  for (uint32_t s = 0; s < nsg; ++s) {
    for (uint32_t k = c.active[s]; k; k &= k - 1) {
      const uint32_t l = (s << 5) | uint32_t(__builtin_ctz(k));
      c.cur = l;
      if constexpr (Track) *c.tls_attrs = &c.attrs[l];
      f(l);
    }
  }
}

MGSIM_ALWAYS_INLINE bool any_active(const ctx &c) {
  uint32_t a = 0;
  for (uint32_t s = 0; s < c.nsg; ++s) a |= c.active[s];
  return a != 0;
}

// A value every active lane computes alike (a uniform declaration's initialiser, a uniform
// condition), computed once, as the first active lane; nothing (a value-initialised R) when no lane
// is active, so it is never computed where no lane would have.
template <class F>
MGSIM_ALWAYS_INLINE auto uniform_value(ctx &c, F &&f) -> decltype(f(0u)) {
  for (uint32_t s = 0; s < c.nsg; ++s) {
    if (const uint32_t m = c.active[s]) {
      const uint32_t l = (s << 5) | uint32_t(__builtin_ctz(m));
      c.cur = l;
      if (c.track) *c.tls_attrs = &c.attrs[l];
      return f(l);
    }
  }
  return decltype(f(0u)){};
}

// Stops the threadgroup after an error: nothing runs any more, every construct falls through.
inline void kill(ctx &c) {
  c.failed = 1;
  for (uint32_t s = 0; s < c.nsg; ++s) c.active[s] = c.alive[s] = 0;
}

// --- per-lane storage ---------------------------------------------------------------------------

// simdgroup_matrix values are the same in every lane of a simdgroup (each lane's thread_elements()
// is its share of one matrix), so work-item storage keeps one per simdgroup: lane l's object is its
// simdgroup's, thread_elements() writes land in it directly, and matrix operations run once.
template <class T>
struct sg_uniform : std::false_type {};
template <class T, int C, int R>
struct sg_uniform<::metal::simdgroup_matrix<T, C, R>> : std::true_type {};
template <class T, size_t N>
struct sg_uniform<T[N]> : sg_uniform<T> {};
template <class T>
struct sg_uniform<const T> : sg_uniform<T> {};

template <class T>
MGSIM_ALWAYS_INLINE void construct_default(T *p) {
  if constexpr (std::is_array<T>::value) {
    for (size_t k = 0; k < std::extent<T>::value; ++k) construct_default(&(*p)[k]);
  } else if constexpr (!std::is_trivially_default_constructible<T>::value) {
    ::new (static_cast<void *>(p)) T;
  }
}

MGSIM_NOINLINE inline char *arena_exhausted(ctx &c, uint64_t need) {
  c.L->host->wi_exhausted(&c, need);
  kill(c);
  return c.arena;  // nothing runs any more; any address will do
}

// Access to per-lane storage, passed by value (a pointer the compiler keeps in a register).
template <class T>
struct view {
  using value_type = std::remove_cv_t<T>;
  static constexpr bool per_sg = sg_uniform<value_type>::value;
  value_type *p = nullptr;
  MGSIM_ALWAYS_INLINE value_type &operator[](uint32_t l) const { return p[per_sg ? (l >> 5) : l]; }
};

// A read-only parameter's storage: the caller's lanes (its own variable's, or its copies), read
// through const references so that nothing in the function can modify them.
template <class V>
struct cview {
  using value_type = typename V::value_type;
  static constexpr bool per_sg = V::per_sg;
  V v;
  MGSIM_ALWAYS_INLINE const value_type &operator[](uint32_t l) const { return v[l]; }
};
// A read-only parameter whose argument is the same in every lane (a uniform expression, or a
// kernel's buffer, threadgroup memory or threadgroup-wide attribute): one value.
template <class T>
struct uni {
  using value_type = T;
  static constexpr bool per_sg = false;
  T v;
  MGSIM_ALWAYS_INLINE const T &operator[](uint32_t) const { return v; }
};
template <class V>
MGSIM_ALWAYS_INLINE cview<V> ro_view(const V &v) {
  return cview<V>{v};
}
template <class V>
MGSIM_ALWAYS_INLINE cview<V> ro_view(const cview<V> &v) {
  return v;
}
template <class T>
MGSIM_ALWAYS_INLINE uni<T> ro_view(const uni<T> &v) {
  return v;
}
// One T per lane (one per simdgroup for sg_uniform types), in the threadgroup's arena; released
// when it goes out of scope (scopes nest, so the arena is a stack).
template <class T>
struct lanes {
  using value_type = std::remove_cv_t<T>;
  static constexpr bool per_sg = sg_uniform<value_type>::value;
  value_type *p;
  ctx &c;
  uint64_t mark;

  MGSIM_ALWAYS_INLINE explicit lanes(ctx &c_) : c(c_), mark(c_.arena_top) {
    const uint32_t count = per_sg ? c.nsg : c.n;
    const uint64_t bytes = (uint64_t(count) * sizeof(value_type) + 63u) & ~uint64_t(63);
    if (!per_sg) c.lane_bytes += sizeof(value_type);
    if (__builtin_expect(mark + bytes > c.arena_cap || c.lane_bytes > c.lane_limit, 0)) {
      p = reinterpret_cast<value_type *>(arena_exhausted(c, bytes));
      return;
    }
    p = reinterpret_cast<value_type *>(c.arena + mark);
    c.arena_top = mark + bytes;
    if constexpr (!std::is_trivially_default_constructible<value_type>::value)
      for (uint32_t i = 0; i < count; ++i) construct_default(p + i);
  }
  lanes(const lanes &) = delete;
  lanes &operator=(const lanes &) = delete;
  MGSIM_ALWAYS_INLINE ~lanes() {
    c.arena_top = mark;
    if (!per_sg) c.lane_bytes -= sizeof(value_type);
  }
  MGSIM_ALWAYS_INLINE value_type &operator[](uint32_t l) const { return p[per_sg ? (l >> 5) : l]; }
  MGSIM_ALWAYS_INLINE view<value_type> get_view() const { return view<value_type>{p}; }
};
// Per-lane storage `N` of type T in generated code: the arena object and its view.
#define MGWI_LANES(N, ...) \
  ::mgsim::wi::lanes<__VA_ARGS__> N##_s(mgwi_c); \
  const auto N = N##_s.get_view()

// The value of one argument expression in one lane: a pointer for an lvalue (so a reference
// parameter binds to the caller's object), the value otherwise.
template <class E>
struct slot {
  using expr_type = E;
  using value_type = std::remove_cv_t<std::remove_reference_t<E>>;
  value_type v;
  MGSIM_ALWAYS_INLINE value_type &get() { return v; }
  template <class X>
  MGSIM_ALWAYS_INLINE void set(X &&x) {
    ::new (static_cast<void *>(&v)) value_type(static_cast<X &&>(x));
  }
};
template <class T>
struct slot<T &> {
  using expr_type = T &;
  T *p;
  MGSIM_ALWAYS_INLINE T &get() const { return *p; }
  MGSIM_ALWAYS_INLINE void set(T &x) { p = &x; }
};
template <class E>
using slot_t = slot<E>;

// The expression an argument slot stands for, for decltype: the same type and value category.
template <class E>
E first(const view<slot<E>> &);

// A caller's per-lane variable passed as it is: its storage is the argument (an lvalue).
template <class T>
T &first(const view<T> &);
template <class V>
const typename V::value_type &first(const cview<V> &);
template <class T>
const T &first(const uni<T> &);

template <class E>
MGSIM_ALWAYS_INLINE decltype(auto) ref(slot<E> &s) {
  return s.get();
}
template <class X>
MGSIM_ALWAYS_INLINE X &ref(X &x) {
  return x;
}

// The expression type an argument's lanes stand for.
template <class X>
struct arg_expr {
  using type = typename X::value_type &;
};
template <class E>
struct arg_expr<view<slot<E>>> {
  using type = E;
};
template <class X>
using arg_expr_t = typename arg_expr<X>::type;

// An argument the caller did not pass (the parameter's default applies).
struct absent {};

// The per-lane results of a call of a function with syncs (nothing for void).
template <class R>
struct result_lanes_s {
  static_assert(!std::is_reference<R>::value,
                "[mgsim] work-item form: a function with syncs that returns a reference");
  using type = lanes<std::remove_cv_t<R>>;
};
template <>
struct result_lanes_s<void> {
  struct type {
    struct none {};
    explicit type(ctx &) {}
    none get_view() const { return {}; }
  };
};
template <class R>
using result_lanes = typename result_lanes_s<R>::type;
#define MGWI_RESULT(N, ...) \
  ::mgsim::wi::result_lanes<__VA_ARGS__> N##_s(mgwi_c); \
  const auto N = N##_s.get_view()

// `return v;` in lane l of a work-item function.
template <class R, class V>
MGSIM_ALWAYS_INLINE void set_ret(R &r, uint32_t l, V &&v) {
  typename R::value_type x = static_cast<V &&>(v);  // copy-initialisation, as `return` does
  r[l] = x;
}

// A reference declaration's per-lane pointer: only lvalues (a temporary would not outlive the
// per-lane code that binds it).
template <class T>
MGSIM_ALWAYS_INLINE T *addr(T &x) {
  return &x;
}
template <class T>
void addr(const T &&) = delete;

// Copy-initialisation of a parameter or return value of type P, as a call does it.
template <class P, class A>
MGSIM_ALWAYS_INLINE P conv(A &&a) {
  return static_cast<A &&>(a);
}

template <class T>
using result_t = std::remove_cv_t<std::remove_reference_t<T>>;

// Argument a of a call, as lane storage of parameter I of overload O: the parameter's value
// (copy-initialised, as a call does), or for a reference parameter the argument's address.
template <class O, unsigned I, class A>
MGSIM_ALWAYS_INLINE param_t<O, I> pass(A &&a) {
  using P = typename param_of<O, I>::type;
  if constexpr (std::is_same<P, param_t<O, I>>::value) {
    return static_cast<A &&>(a);
  } else {
    return addr(a);
  }
}

// The caller's per-lane variable `v` as argument I of O: its own storage when the function reads it
// only and takes exactly its type, else `copy` (which the caller filled).
template <class O, unsigned I, class V>
inline constexpr bool direct_arg = by_ro<O, I> && std::is_same<typename V::value_type, param_t<O, I>>::value;
template <class O, unsigned I, class V, class C>
MGSIM_ALWAYS_INLINE auto darg(const V &v, const C &copy) {
  if constexpr (direct_arg<O, I, V>) return v;
  else return copy;
}
// A uniform argument `f()` as argument I of O: one value when the function reads it only, else
// `copy` (which the caller filled per lane).
template <class O, unsigned I, class F, class C>
MGSIM_ALWAYS_INLINE auto uarg(F &&f, const C &copy) {
  if constexpr (by_ro<O, I>) return uni<param_t<O, I>>{pass<O, I>(f())};
  else return copy;
}

// A declaration initialised by a call with syncs: its own lanes, or the call's result lanes when
// they hold its type (then nothing is copied).
template <class V, class R>
inline constexpr bool adopts = std::is_same<typename std::remove_cv_t<V>::value_type, typename std::remove_cv_t<R>::value_type>::value;
template <class V, class R>
MGSIM_ALWAYS_INLINE auto adopt(const V &own, const R &result) {
  if constexpr (adopts<V, R>) return result;
  else return own;
}

// A uniform loop variable passed as a bare call argument: a copy, so a non-const reference
// parameter (which would modify it once per lane) does not compile.
template <class T>
MGSIM_ALWAYS_INLINE T rv(const T &x) {
  return x;
}

// A region's copy of a lane's variable: small values by value (the compiler keeps them in
// registers), anything else by reference.
template <class T, bool Small = (sizeof(T) <= 32 && !std::is_array<T>::value &&
                                 std::is_trivially_destructible<T>::value && std::is_copy_assignable<T>::value)>
struct cache_s {
  using type = T;
};
template <class T>
struct cache_s<T, false> {
  using type = T &;
};
template <class T>
using cache_t = typename cache_s<T>::type;
// The same for a read-only parameter: never modified, never stored back.
template <class T>
using ro_cache_t = std::conditional_t<std::is_reference<cache_t<T>>::value, const T &, const T>;
template <class T, class C>
MGSIM_ALWAYS_INLINE void store(T &dst, const C &c) {
  if constexpr (!std::is_reference<cache_t<T>>::value) dst = c;
}

// A per-lane object initialised from a value (declarations with an initialiser).
template <class T, class V>
MGSIM_ALWAYS_INLINE void assign(T &dst, const V &v) {
  if constexpr (std::is_array<T>::value) {
    static_assert(sizeof(T) == sizeof(V), "[mgsim] array initialiser of another size");
    memcpy(static_cast<void *>(&dst), static_cast<const void *>(&v), sizeof(T));
  } else {
    dst = v;
  }
}

// --- control flow -------------------------------------------------------------------------------

// A work-item function: `return` takes a lane out of the active mask until the function ends (out
// of the group for good when the function is the kernel).
struct fn_scope {
  ctx &c;
  const bool kernel;
  uint32_t entry[32];
  MGSIM_ALWAYS_INLINE fn_scope(ctx &c_, bool kernel_) : c(c_), kernel(kernel_) {
    for (uint32_t s = 0; s < c.nsg; ++s) entry[s] = c.active[s];
    ++c.depth;
  }
  MGSIM_ALWAYS_INLINE void retire(uint32_t l) {
    c.active[l >> 5] &= ~bit(l);
    if (kernel) c.alive[l >> 5] &= ~bit(l);
  }
  // `return` in every active lane.
  MGSIM_ALWAYS_INLINE void retire_all() {
    for (uint32_t s = 0; s < c.nsg; ++s) {
      if (kernel) c.alive[s] &= ~c.active[s];
      c.active[s] = 0;
    }
  }
  MGSIM_ALWAYS_INLINE ~fn_scope() {
    --c.depth;
    for (uint32_t s = 0; s < c.nsg; ++s) c.active[s] = c.failed ? 0u : entry[s];
  }
};

// A loop that contains syncs: runs while any lane is in it. Lanes whose condition fails or that
// break wait at the loop's end; lanes that continue wait for the next iteration.
struct loop_scope {
  ctx &c;
  uint32_t done[32];
  uint32_t skipped[32];
  MGSIM_ALWAYS_INLINE explicit loop_scope(ctx &c_) : c(c_) {
    for (uint32_t s = 0; s < c.nsg; ++s) done[s] = skipped[s] = 0;
  }
  MGSIM_ALWAYS_INLINE void exit(uint32_t l) {
    c.active[l >> 5] &= ~bit(l);
    done[l >> 5] |= bit(l);
  }
  MGSIM_ALWAYS_INLINE void brk(uint32_t l) { exit(l); }
  MGSIM_ALWAYS_INLINE void skip(uint32_t l) {
    c.active[l >> 5] &= ~bit(l);
    skipped[l >> 5] |= bit(l);
  }
  MGSIM_ALWAYS_INLINE bool any() const { return any_active(c); }
  // End of the body: the lanes that continued take part in the step and the next test.
  MGSIM_ALWAYS_INLINE void next() {
    for (uint32_t s = 0; s < c.nsg; ++s) {
      c.active[s] |= c.failed ? 0u : skipped[s];
      skipped[s] = 0;
    }
  }
  // A loop whose condition every lane evaluates alike ended: the lanes still in it leave together.
  MGSIM_ALWAYS_INLINE void finish() {
    for (uint32_t s = 0; s < c.nsg; ++s) done[s] |= c.active[s];
  }
  MGSIM_ALWAYS_INLINE ~loop_scope() {
    for (uint32_t s = 0; s < c.nsg; ++s) c.active[s] = c.failed ? 0u : done[s];
  }
};

// An if / else that contains syncs: the then-lanes run the then-branch, the others the else-branch,
// and both continue together.
struct branch {
  ctx &c;
  uint32_t entry[32];
  uint32_t taken[32];
  uint32_t after[32];
  MGSIM_ALWAYS_INLINE explicit branch(ctx &c_) : c(c_) {
    for (uint32_t s = 0; s < c.nsg; ++s) {
      entry[s] = c.active[s];
      taken[s] = 0;
    }
  }
  MGSIM_ALWAYS_INLINE void take(uint32_t l) { taken[l >> 5] |= bit(l); }
  MGSIM_ALWAYS_INLINE void take_all() {
    for (uint32_t s = 0; s < c.nsg; ++s) taken[s] = ~0u;
  }
  MGSIM_ALWAYS_INLINE bool then_() {
    for (uint32_t s = 0; s < c.nsg; ++s) c.active[s] = c.failed ? 0u : entry[s] & taken[s];
    return any_active(c);
  }
  MGSIM_ALWAYS_INLINE void then_done() {
    for (uint32_t s = 0; s < c.nsg; ++s) after[s] = c.active[s];
  }
  MGSIM_ALWAYS_INLINE bool else_() {
    for (uint32_t s = 0; s < c.nsg; ++s) c.active[s] = c.failed ? 0u : entry[s] & ~taken[s];
    return any_active(c);
  }
  MGSIM_ALWAYS_INLINE void done() {
    for (uint32_t s = 0; s < c.nsg; ++s) c.active[s] = c.failed ? 0u : c.active[s] | after[s];
  }
};

// threadgroup_barrier: every thread of the group must be here; none is a no-op (the barrier is in
// code no lane runs). Anything else is the error fiber mode reports too.
MGSIM_NOINLINE inline void barrier(ctx &c) {
  uint32_t reached = 0, alive = 0;
  bool all = true;
  for (uint32_t s = 0; s < c.nsg; ++s) {
    reached += uint32_t(__builtin_popcount(c.active[s]));
    alive += uint32_t(__builtin_popcount(c.alive[s]));
    all = all && c.active[s] == c.alive[s];
  }
  // Threads that returned from the kernel never reach it either.
  if (reached == 0) return;
  if (all && alive == c.n) {
    if (c.G->race) ++c.G->race->epoch;  // checked mode: a new barrier interval
    return;
  }
  c.L->host->wi_barrier_error(&c, reached, c.n - alive);
  kill(c);
}

// --- collectives --------------------------------------------------------------------------------

// Checked mode: a collective or simdgroup_barrier orders the accesses of the simdgroups taking part.
MGSIM_ALWAYS_INLINE void simd_sync(ctx &c) {
  if (abi::race_state *r = c.G->race)
    for (uint32_t s = 0; s < c.nsg; ++s)
      if (c.active[s]) ++r->simd_epoch[s];
}

template <class T, class X>
MGSIM_ALWAYS_INLINE T value_of(const X &x, uint32_t l) {
  return T(::mgsim::impl::rd(ref(x[l])));
}

// Folds the active lanes' values in lane order (as fiber mode's reduce_all) and gives every member
// the result.
template <class T, class R, class X, class Op>
MGSIM_ALWAYS_INLINE void reduce(ctx &c, R &res, const X &x, Op op) {
  for (uint32_t s = 0; s < c.nsg; ++s) {
    const uint32_t m = c.active[s];
    if (!m) continue;
    const uint32_t base = s << 5;
    uint32_t k = m;
    T acc = value_of<T>(x, base + uint32_t(__builtin_ctz(k)));
    for (k &= k - 1; k; k &= k - 1) acc = op(acc, value_of<T>(x, base + uint32_t(__builtin_ctz(k))));
    for (k = m; k; k &= k - 1) res[base + uint32_t(__builtin_ctz(k))] = acc;
  }
}

template <class T, class R, class X, class Op>
MGSIM_ALWAYS_INLINE void scan(ctx &c, R &res, const X &x, T identity, bool inclusive, Op op) {
  for (uint32_t s = 0; s < c.nsg; ++s) {
    const uint32_t base = s << 5;
    T acc = identity;
    for (uint32_t k = c.active[s]; k; k &= k - 1) {
      const uint32_t l = base + uint32_t(__builtin_ctz(k));
      const T v = value_of<T>(x, l);
      if (inclusive) {
        acc = op(acc, v);
        res[l] = acc;
      } else {
        res[l] = acc;
        acc = op(acc, v);
      }
    }
  }
}

// Every member reads lane src(j, arg); a source outside the active set keeps the member's own value.
template <class T, class R, class X, class A, class Src>
MGSIM_ALWAYS_INLINE void permute(ctx &c, R &res, const X &x, const A &arg, Src src) {
  for (uint32_t s = 0; s < c.nsg; ++s) {
    const uint32_t m = c.active[s];
    if (!m) continue;
    const uint32_t base = s << 5;
    T v[32];
    for (uint32_t k = m; k; k &= k - 1) {
      const uint32_t j = uint32_t(__builtin_ctz(k));
      v[j] = value_of<T>(x, base + j);
    }
    for (uint32_t k = m; k; k &= k - 1) {
      const uint32_t j = uint32_t(__builtin_ctz(k));
      const int64_t from = src(j, uint32_t(ref(arg[base + j])), m);
      res[base + j] = (from >= 0 && from < 32 && ((m >> from) & 1u)) ? v[from] : v[j];
    }
  }
}

// Bit j of each member's result: lane j is active and its value is true.
template <class X>
MGSIM_ALWAYS_INLINE uint32_t vote(const X &x, uint32_t base, uint32_t m) {
  uint32_t bits = 0;
  for (uint32_t k = m; k; k &= k - 1) {
    const uint32_t j = uint32_t(__builtin_ctz(k));
    if (bool(::mgsim::impl::rd(ref(x[base + j])))) bits |= 1u << j;
  }
  return bits;
}

// --- simdgroup matrices -------------------------------------------------------------------------

// The whole matrix a simdgroup's lanes hold in `e` (an lvalue evaluator). Work-item storage keeps
// one matrix per simdgroup, complete whatever thread_elements() wrote (it is used in place); a
// matrix every lane keeps its own copy of (a struct member, say) gathers each lane's share into
// `tmp`, as fiber mode's gather does.
template <class E, class Mat>
MGSIM_ALWAYS_INLINE const Mat &whole_matrix(E &e, uint32_t base, uint32_t m, Mat &tmp) {
  const uint32_t l0 = base + uint32_t(__builtin_ctz(m));
  auto &a0 = e(l0);
  if (!a0.mg_sync) return a0;
  bool shared = true;
  for (uint32_t k = m & (m - 1); k && shared; k &= k - 1) shared = &e(base + uint32_t(__builtin_ctz(k))) == &a0;
  if (shared) {
    const_cast<Mat &>(static_cast<const Mat &>(a0)).mg_sync = nullptr;  // one object: every share is in it
    return a0;
  }
  tmp = a0;
  tmp.mg_sync = nullptr;
  for (uint32_t k = m & (m - 1); k; k &= k - 1) {
    const uint32_t j = uint32_t(__builtin_ctz(k));
    auto &aj = e(base + j);
    tmp.mg_p[Mat::mg_pair(j)] = aj.mg_p[Mat::mg_pair(j)];
  }
  return tmp;
}
template <class E>
using matrix_of = std::remove_cv_t<std::remove_reference_t<decltype(std::declval<E &>()(0u))>>;

// Gives every active lane's destination (evaluated per lane) the value computed into lane l0's.
// (Work-item storage holds one matrix per simdgroup: when the first and last lanes' destinations
// are that one object, every lane's is; per-lane objects never share an address.)
template <class E, class Mat>
MGSIM_ALWAYS_INLINE void spread(E &e, uint32_t base, uint32_t m, const Mat &value) {
  if (&e(base + 31u - uint32_t(__builtin_clz(m))) == &value) return;
  for (uint32_t k = m; k; k &= k - 1) {
    auto &d = e(base + uint32_t(__builtin_ctz(k)));
    if (&d != &value) d = value;
  }
}

template <class ED, class... EA>
MGSIM_ALWAYS_INLINE void simdgroup_load(ctx &c, ED &&ed, EA &&...ea) {
  for (uint32_t s = 0; s < c.nsg; ++s) {
    const uint32_t m = c.active[s];
    if (!m) continue;
    const uint32_t base = s << 5, l0 = base + uint32_t(__builtin_ctz(m));
    c.cur = l0;
    if (c.track) *c.tls_attrs = &c.attrs[l0];
    auto &d0 = ed(l0);
    ::metal::simdgroup_load(d0, ea(l0)...);
    spread(ed, base, m, d0);
  }
}

template <class EM, class... EA>
MGSIM_ALWAYS_INLINE void simdgroup_store(ctx &c, EM &&em, EA &&...ea) {
  for (uint32_t s = 0; s < c.nsg; ++s) {
    const uint32_t m = c.active[s];
    if (!m) continue;
    const uint32_t base = s << 5, l0 = base + uint32_t(__builtin_ctz(m));
    c.cur = l0;
    if (c.track) *c.tls_attrs = &c.attrs[l0];
    matrix_of<EM> tmp;
    const auto &whole = whole_matrix(em, base, m, tmp);
    ::metal::simdgroup_store(whole, ea(l0)...);
  }
}

template <class ED, class EA, class EB, class EC>
MGSIM_ALWAYS_INLINE void simdgroup_multiply_accumulate(ctx &c, ED &&ed, EA &&ea, EB &&eb, EC &&ec) {
  for (uint32_t s = 0; s < c.nsg; ++s) {
    const uint32_t m = c.active[s];
    if (!m) continue;
    const uint32_t base = s << 5, l0 = base + uint32_t(__builtin_ctz(m));
    c.cur = l0;
    matrix_of<EA> ta;
    matrix_of<EB> tb;
    matrix_of<EC> tc;
    const auto &a = whole_matrix(ea, base, m, ta);
    const auto &b = whole_matrix(eb, base, m, tb);
    const auto &cc = whole_matrix(ec, base, m, tc);
    auto &d0 = ed(l0);
    ::metal::simdgroup_multiply_accumulate(d0, a, b, cc);
    spread(ed, base, m, d0);
  }
}

template <class ED, class EA, class EB>
MGSIM_ALWAYS_INLINE void simdgroup_multiply(ctx &c, ED &&ed, EA &&ea, EB &&eb) {
  for (uint32_t s = 0; s < c.nsg; ++s) {
    const uint32_t m = c.active[s];
    if (!m) continue;
    const uint32_t base = s << 5, l0 = base + uint32_t(__builtin_ctz(m));
    c.cur = l0;
    matrix_of<EA> ta;
    matrix_of<EB> tb;
    const auto &a = whole_matrix(ea, base, m, ta);
    const auto &b = whole_matrix(eb, base, m, tb);
    auto &d0 = ed(l0);
    ::metal::simdgroup_multiply(d0, a, b);
    spread(ed, base, m, d0);
  }
}

}  // namespace wi
}  // namespace mgsim

// Work-item forms of the MSL collectives: metal::mgwi_<name>(ctx, result lanes, argument lanes...),
// with the scalar form's type checks and its fiber-mode semantics (lane-order folds and scans,
// sources outside the active set keep their own value).
namespace metal {

#define MGWI_SIMD_CHECK(NAME, T, INT_ONLY)                                                         \
  static_assert(mgsim::impl::simd_type_ok<T>,                                                      \
                "MSL: " #NAME " takes a scalar or vector of char, short, int, half, float or "     \
                "bfloat (signed or unsigned), not bool, long, ulong or a structure (MSL 6.9.2)");  \
  static_assert(!(INT_ONLY) || mgsim::impl::simd_int_ok<T>,                                        \
                "MSL: " #NAME " is a bitwise reduction: it takes an integer scalar or vector "     \
                "(MSL 6.9.2)")

#define MGWI_REDUCE(NAME, EXPR, INT_ONLY)                                                          \
  template <class R, class X>                                                                      \
  MGSIM_ALWAYS_INLINE void mgwi_##NAME(mgsim::wi::ctx &c, R &res, mgsim::site, const X &x) {      \
    using T = mgsim::lang::value_t<mgsim::wi::arg_expr_t<X>>;                             \
    MGWI_SIMD_CHECK(NAME, T, INT_ONLY);                                                            \
    mgsim::wi::simd_sync(c);                                                                       \
    mgsim::wi::reduce<T>(c, res, x, [](const T &a, const T &c2) { return EXPR; });                 \
  }
MGWI_REDUCE(simd_sum, T(a + c2), false)
MGWI_REDUCE(simd_product, T(a * c2), false)
MGWI_REDUCE(simd_max, mgsim::impl::op_max<T>(a, c2), false)
MGWI_REDUCE(simd_min, mgsim::impl::op_min<T>(a, c2), false)
MGWI_REDUCE(simd_and, T(a & c2), true)
MGWI_REDUCE(simd_or, T(a | c2), true)
MGWI_REDUCE(simd_xor, T(a ^ c2), true)
#undef MGWI_REDUCE

#define MGWI_SCAN(NAME, IDENTITY, INCL, EXPR)                                                      \
  template <class R, class X>                                                                      \
  MGSIM_ALWAYS_INLINE void mgwi_##NAME(mgsim::wi::ctx &c, R &res, mgsim::site, const X &x) {      \
    using T = mgsim::lang::value_t<mgsim::wi::arg_expr_t<X>>;                             \
    MGWI_SIMD_CHECK(NAME, T, false);                                                               \
    mgsim::wi::simd_sync(c);                                                                       \
    mgsim::wi::scan<T>(c, res, x, T(IDENTITY), INCL, [](const T &a, const T &c2) { return EXPR; });  \
  }
MGWI_SCAN(simd_prefix_inclusive_sum, 0, true, T(a + c2))
MGWI_SCAN(simd_prefix_exclusive_sum, 0, false, T(a + c2))
MGWI_SCAN(simd_prefix_inclusive_product, 1, true, T(a * c2))
MGWI_SCAN(simd_prefix_exclusive_product, 1, false, T(a * c2))
#undef MGWI_SCAN

#define MGWI_PERMUTE(NAME, SRC)                                                                    \
  template <class R, class X, class A>                                                             \
  MGSIM_ALWAYS_INLINE void mgwi_##NAME(mgsim::wi::ctx &c, R &res, mgsim::site, const X &x,        \
                                       const A &arg) {                                             \
    using T = mgsim::lang::value_t<mgsim::wi::arg_expr_t<X>>;                             \
    MGWI_SIMD_CHECK(NAME, T, false);                                                               \
    mgsim::wi::simd_sync(c);                                                                       \
    mgsim::wi::permute<T>(c, res, x, arg, [](uint32_t j, uint32_t a, uint32_t m) {                 \
      (void)m;                                                                                     \
      return int64_t(SRC);                                                                         \
    });                                                                                            \
  }
MGWI_PERMUTE(simd_shuffle, a)
MGWI_PERMUTE(simd_broadcast, a)
MGWI_PERMUTE(simd_shuffle_xor, (j ^ a) & 31u)
MGWI_PERMUTE(simd_shuffle_up, int64_t(j) - int64_t(a))
MGWI_PERMUTE(simd_shuffle_down, int64_t(j) + int64_t(a))
MGWI_PERMUTE(simd_shuffle_rotate_up, (j + 32u - (a & 31u)) & 31u)
MGWI_PERMUTE(simd_shuffle_rotate_down, (j + a) & 31u)
#undef MGWI_PERMUTE

template <class R, class X>
MGSIM_ALWAYS_INLINE void mgwi_simd_broadcast_first(mgsim::wi::ctx &c, R &res, mgsim::site, const X &x) {
  using T = mgsim::lang::value_t<mgsim::wi::arg_expr_t<X>>;
  MGWI_SIMD_CHECK(simd_broadcast_first, T, false);
  mgsim::wi::simd_sync(c);
  for (uint32_t s = 0; s < c.nsg; ++s) {
    const uint32_t m = c.active[s];
    if (!m) continue;
    const uint32_t base = s << 5;
    const T v = mgsim::wi::value_of<T>(x, base + uint32_t(__builtin_ctz(m)));
    for (uint32_t k = m; k; k &= k - 1) res[base + uint32_t(__builtin_ctz(k))] = v;
  }
}
#undef MGWI_SIMD_CHECK

// The votes: bits are lanes of the simdgroup whose value is true among the active ones.
#define MGWI_VOTE(NAME, RESULT)                                                                    \
  template <class R, class X>                                                                      \
  MGSIM_ALWAYS_INLINE void mgwi_##NAME(mgsim::wi::ctx &c, R &res, mgsim::site, const X &x) {      \
    mgsim::wi::simd_sync(c);                                                                       \
    for (uint32_t s = 0; s < c.nsg; ++s) {                                                         \
      const uint32_t m = c.active[s];                                                              \
      if (!m) continue;                                                                            \
      const uint32_t base = s << 5;                                                                \
      const uint32_t bits = mgsim::wi::vote(x, base, m);                                           \
      (void)bits;                                                                                  \
      for (uint32_t k = m; k; k &= k - 1) {                                                        \
        const uint32_t j = uint32_t(__builtin_ctz(k));                                             \
        (void)j;                                                                                   \
        res[base + j] = RESULT;                                                                    \
      }                                                                                            \
    }                                                                                              \
  }
MGWI_VOTE(simd_ballot, simd_vote(uint64_t(bits)))
MGWI_VOTE(simd_any, bits != 0)
MGWI_VOTE(simd_all, bits == m)
#undef MGWI_VOTE

template <class R>
MGSIM_ALWAYS_INLINE void mgwi_simd_active_threads_mask(mgsim::wi::ctx &c, R &res, mgsim::site) {
  mgsim::wi::simd_sync(c);
  for (uint32_t s = 0; s < c.nsg; ++s)
    for (uint32_t k = c.active[s]; k; k &= k - 1)
      res[(s << 5) + uint32_t(__builtin_ctz(k))] = simd_vote(uint64_t(c.active[s]));
}
template <class R>
MGSIM_ALWAYS_INLINE void mgwi_simd_is_first(mgsim::wi::ctx &c, R &res, mgsim::site) {
  mgsim::wi::simd_sync(c);
  for (uint32_t s = 0; s < c.nsg; ++s) {
    const uint32_t m = c.active[s];
    for (uint32_t k = m; k; k &= k - 1) {
      const uint32_t j = uint32_t(__builtin_ctz(k));
      res[(s << 5) + j] = j == uint32_t(__builtin_ctz(m));
    }
  }
}

// Barriers: threadgroup_barrier waits for the whole group; simdgroup_barrier orders a simdgroup,
// which runs its lanes' code up to here before any lane goes on anyway.
MGSIM_ALWAYS_INLINE void mgwi_threadgroup_barrier(mgsim::wi::ctx &c) { mgsim::wi::barrier(c); }
MGSIM_ALWAYS_INLINE void mgwi_simdgroup_barrier(mgsim::wi::ctx &c) { mgsim::wi::simd_sync(c); }

}  // namespace metal

#endif  // MGSIM_WI_H
