// CPU kernels of the ordering primitives (sort, argsort, partition, argmax/argmin, searchsorted).
// Keys are read once in their JS domain; orderings follow MLX's CPU backend: NaN sorts after
// every number, complex values compare lexicographically (real part, then imaginary part).
import type { MgArray } from "../../core/array.ts";
import { complex64, int64, uint64 } from "../../core/dtype.ts";
import { elementOffsets, lanesOf } from "../../core/elements.ts";
import { ArgPartition, ArgSort, type AxisParams, Partition, SearchSorted, Sort } from "../../core/primitives/sort.ts";
import { type CpuKernel, registerCpu } from "./registry.ts";
import { readBigints, readComplex, readNumbers, storageView, writeNumbers } from "./values.ts";

/** Row-major element values of an array in the domain its dtype compares in. */
export type Keys =
  | { kind: "number"; v: Float64Array }
  | { kind: "bigint"; v: bigint[] }
  | { kind: "complex"; v: Float64Array };

export function readKeys(a: MgArray): Keys {
  if (a.dtype === complex64) return { kind: "complex", v: readComplex(a) };
  if (a.dtype === int64 || a.dtype === uint64) return { kind: "bigint", v: readBigints(a) };
  return { kind: "number", v: readNumbers(a) };
}

/**
 * A three-way comparison of two flat positions of the same key set: NaN after everything else
 * (NaNs equal to each other), -0 equal to 0. Ties return 0 so callers can break them by index.
 */
export function keyComparator(keys: Keys): (i: number, j: number) => number {
  switch (keys.kind) {
    case "number": {
      const v = keys.v;
      return (i, j) => {
        const x = v[i]!;
        const y = v[j]!;
        if (x < y) return -1;
        if (x > y) return 1;
        if (x === y) return 0;
        const xn = x !== x;
        return xn === (y !== y) ? 0 : xn ? 1 : -1;
      };
    }
    case "bigint": {
      const v = keys.v;
      return (i, j) => (v[i]! < v[j]! ? -1 : v[i]! > v[j]! ? 1 : 0);
    }
    case "complex": {
      const v = keys.v;
      return (i, j) => {
        const xr = v[2 * i]!, xi = v[2 * i + 1]!, yr = v[2 * j]!, yi = v[2 * j + 1]!;
        const xn = xr !== xr || xi !== xi;
        const yn = yr !== yr || yi !== yi;
        if (xn || yn) return xn === yn ? 0 : xn ? 1 : -1;
        if (xr !== yr) return xr < yr ? -1 : 1;
        return xi < yi ? -1 : xi > yi ? 1 : 0;
      };
    }
  }
}

/** The row-major flat index where each lane along `axis` starts, in row-major lane order. */
export function laneStarts(shape: readonly number[], axis: number): Float64Array {
  let inner = 1;
  for (let i = axis + 1; i < shape.length; i++) inner *= shape[i]!;
  let outer = 1;
  for (let i = 0; i < axis; i++) outer *= shape[i]!;
  const n = shape[axis]!;
  const out = new Float64Array(outer * inner);
  let k = 0;
  for (let o = 0; o < outer; o++) for (let j = 0; j < inner; j++) out[k++] = o * n * inner + j;
  return out;
}

/** Distance between neighbours along `axis` in a row-major array of `shape`. */
export function axisStride(shape: readonly number[], axis: number): number {
  let inner = 1;
  for (let i = axis + 1; i < shape.length; i++) inner *= shape[i]!;
  return inner;
}

/**
 * For every lane along `axis`, the stable ascending order of its elements: out[start + k·stride]
 * is the lane position of the k-th smallest element (ties keep their original order).
 */
export function argsortLanes(keys: Keys, shape: readonly number[], axis: number): Uint32Array {
  const size = shape.reduce((a, b) => a * b, 1);
  const out = new Uint32Array(size);
  if (size === 0) return out;
  const n = shape[axis]!;
  const stride = axisStride(shape, axis);
  const order = new Uint32Array(n);
  if (keys.kind === "number") {
    // The common case gets a merge sort over typed arrays (no comparator calls).
    const v = keys.v;
    const lane = new Float64Array(n);
    const nan = new Uint8Array(n);
    const tmp = new Uint32Array(n);
    for (const start of laneStarts(shape, axis)) {
      for (let k = 0; k < n; k++) {
        const e = v[start + k * stride]!;
        nan[k] = e !== e ? 1 : 0;
        lane[k] = e !== e ? Infinity : e;
        order[k] = k;
      }
      stableSortNumbers(order, tmp, lane, nan);
      for (let k = 0; k < n; k++) out[start + k * stride] = order[k]!;
    }
    return out;
  }
  const cmp = keyComparator(keys);
  const list = new Array<number>(n);
  for (const start of laneStarts(shape, axis)) {
    for (let k = 0; k < n; k++) list[k] = k;
    list.sort((p, q) => cmp(start + p * stride, start + q * stride) || p - q);
    for (let k = 0; k < n; k++) out[start + k * stride] = list[k]!;
  }
  return out;
}

/**
 * Sorts `order` (lane positions) by (key, isNaN) ascending, stably: bottom-up merge sort over
 * insertion-sorted runs. NaN keys arrive as +∞ with nan = 1, so they follow every number;
 * -0 and 0 compare equal and keep their order.
 */
function stableSortNumbers(order: Uint32Array, tmp: Uint32Array, key: Float64Array, nan: Uint8Array): void {
  const n = order.length;
  const RUN = 16;
  for (let lo = 0; lo < n; lo += RUN) {
    const hi = Math.min(lo + RUN, n);
    for (let i = lo + 1; i < hi; i++) {
      const cur = order[i]!;
      const kc = key[cur]!, nc = nan[cur]!;
      let j = i - 1;
      while (j >= lo) {
        const o = order[j]!;
        const ko = key[o]!;
        if (kc < ko || (kc === ko && nc < nan[o]!)) {
          order[j + 1] = o;
          j--;
        } else break;
      }
      order[j + 1] = cur;
    }
  }
  let src = order, dst = tmp;
  for (let width = RUN; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n), hi = Math.min(lo + 2 * width, n);
      let i = lo, j = mid, d = lo;
      while (i < mid && j < hi) {
        const a = src[i]!, b = src[j]!;
        const ka = key[a]!, kb = key[b]!;
        // take from the right only when strictly smaller: stability
        if (kb < ka || (kb === ka && nan[b]! < nan[a]!)) {
          dst[d++] = b;
          j++;
        } else {
          dst[d++] = a;
          i++;
        }
      }
      while (i < mid) dst[d++] = src[i++]!;
      while (j < hi) dst[d++] = src[j++]!;
    }
    const t = src;
    src = dst;
    dst = t;
  }
  if (src !== order) order.set(src);
}

/**
 * Allocates `out` (shape of `index`) and sets out[…, k, …] = x[…, index[…, k, …], …] along `axis`,
 * copying raw storage items so every dtype (NaN payloads, -0, bfloat16 bits) moves unchanged —
 * how Sort and Partition apply their permutation. `index` holds lane positions, row-major, for an
 * array of `indexShape`; `x` has the same shape except along `axis`.
 */
export function gatherAlongAxisRaw(x: MgArray, index: ArrayLike<number>, indexShape: readonly number[], axis: number, out: MgArray): void {
  out.allocate();
  const dst = storageView(out);
  const l = x.layout!;
  const src = storageView(x);
  const lanes = lanesOf(x.dtype);
  const offsets = elementOffsets(x.shape, l.strides, l.offset);
  const xStarts = laneStarts(x.shape, axis);
  const iStarts = laneStarts(indexShape, axis);
  const stride = axisStride(x.shape, axis); // equal for both: the dims after `axis` match
  const n = indexShape[axis]!;
  for (let lane = 0; lane < iStarts.length; lane++) {
    const xs = xStarts[lane]!;
    const is = iStarts[lane]!;
    for (let k = 0; k < n; k++) {
      const r = is + k * stride;
      const so = offsets[xs + index[r]! * stride]! * lanes;
      for (let c = 0; c < lanes; c++) dst[r * lanes + c] = src[so + c]!;
    }
  }
}

/**
 * For each value, the insertion point in the 1-D ascending `sorted` (NaN last): the first
 * position whose element is not less than the value (left), or greater than it (right).
 */
export function searchSorted(sorted: MgArray, values: MgArray, right: boolean): Float64Array {
  const a = readKeys(sorted);
  const v = readKeys(values);
  const n = sorted.size;
  const out = new Float64Array(values.size);
  // less(i, j): a-element i < v-element j (side "left" moves past it); for "right" we move past
  // a-elements with !(v < a).
  let below: (mid: number, j: number) => boolean;
  if (a.kind === "number" && v.kind === "number") {
    const av = a.v, vv = v.v;
    const less = (x: number, y: number) => (x !== x ? false : y !== y ? true : x < y);
    below = right ? (m, j) => !less(vv[j]!, av[m]!) : (m, j) => less(av[m]!, vv[j]!);
  } else if (a.kind === "bigint" && v.kind === "bigint") {
    const av = a.v, vv = v.v;
    below = right ? (m, j) => !(vv[j]! < av[m]!) : (m, j) => av[m]! < vv[j]!;
  } else if (a.kind === "complex" && v.kind === "complex") {
    const av = a.v, vv = v.v;
    const less = (xr: number, xi: number, yr: number, yi: number) => {
      if (xr !== xr || xi !== xi) return false;
      if (yr !== yr || yi !== yi) return true;
      return xr < yr || (xr === yr && xi < yi);
    };
    below = right
      ? (m, j) => !less(vv[2 * j]!, vv[2 * j + 1]!, av[2 * m]!, av[2 * m + 1]!)
      : (m, j) => less(av[2 * m]!, av[2 * m + 1]!, vv[2 * j]!, vv[2 * j + 1]!);
  } else {
    throw new Error("[searchsorted] sequence and values must share a dtype (internal error).");
  }
  for (let j = 0; j < out.length; j++) {
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (below(mid, j)) lo = mid + 1;
      else hi = mid;
    }
    out[j] = lo;
  }
  return out;
}

/**
 * Index of the first maximum (or minimum) along `axis` for every lane, as MLX's ArgReduce:
 * start from the lane's first element and move only on a strict improvement (see `improves`), so
 * ties keep the first index and the first NaN, once reached, stays the answer.
 */
export function argReduceLanes(keys: Keys, shape: readonly number[], axis: number, max: boolean): Float64Array {
  const n = shape[axis]!;
  const stride = axisStride(shape, axis);
  const starts = laneStarts(shape, axis);
  const out = new Float64Array(starts.length);
  const better = improves(keys, max);
  for (let lane = 0; lane < starts.length; lane++) {
    const s = starts[lane]!;
    let best = 0;
    for (let k = 1; k < n; k++) if (better(s + k * stride, s + best * stride)) best = k;
    out[lane] = best;
  }
  return out;
}

/**
 * better(i, j): element i strictly beats element j. A NaN beats every number and no other NaN, so
 * the walk settles on the first NaN: argmax/argmin agree with max/min, which propagate NaN
 * (MLX since ml-explore/mlx#4292; numpy and torch do the same).
 */
function improves(keys: Keys, max: boolean): (i: number, j: number) => boolean {
  switch (keys.kind) {
    case "number": {
      const v = keys.v;
      return max
        ? (i, j) => v[i]! > v[j]! || (Number.isNaN(v[i]!) && !Number.isNaN(v[j]!))
        : (i, j) => v[i]! < v[j]! || (Number.isNaN(v[i]!) && !Number.isNaN(v[j]!));
    }
    case "bigint": {
      const v = keys.v;
      return max ? (i, j) => v[i]! > v[j]! : (i, j) => v[i]! < v[j]!;
    }
    case "complex": {
      // MLX's complex64_t ordering: by real part, then imaginary part.
      const v = keys.v;
      const nan = (i: number) => Number.isNaN(v[2 * i]!) || Number.isNaN(v[2 * i + 1]!);
      const gt = (i: number, j: number) => v[2 * i]! > v[2 * j]! || (v[2 * i] === v[2 * j] && v[2 * i + 1]! > v[2 * j + 1]!);
      return max
        ? (i, j) => gt(i, j) || (nan(i) && !nan(j))
        : (i, j) => gt(j, i) || (nan(i) && !nan(j));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Registrations

/** Sort and Partition share one reference: the fully sorted lane is also a valid partition. */
const sortValues: CpuKernel<AxisParams> = ([a], [out], p) => {
  const order = argsortLanes(readKeys(a!), a!.shape, p.axis);
  gatherAlongAxisRaw(a!, order, a!.shape, p.axis, out!);
};
const sortIndices: CpuKernel<AxisParams> = ([a], [out], p) => writeNumbers(out!, argsortLanes(readKeys(a!), a!.shape, p.axis));

registerCpu(Sort, sortValues);
registerCpu(Partition, sortValues);
registerCpu(ArgSort, sortIndices);
registerCpu(ArgPartition, sortIndices);
registerCpu(SearchSorted, ([a, v], [out], p) => writeNumbers(out!, searchSorted(a!, v!, p.right)));
