// einsum and einsumPath, with MLX's (NumPy's, opt_einsum's) semantics: implicit and explicit
// output, one ellipsis per operand, repeated subscripts (diagonals), size-1 broadcasting, and a
// greedy pairwise contraction order. Each pairwise contraction with a summed index runs as one
// batched matmul; anything else multiplies (broadcasting) and sums.
import { MgArray } from "../array.ts";
import { isInexact, uint32 } from "../dtype.ts";
import { formatShape } from "../shape.ts";
import { type ArrayInput, splitOptions, type StreamOptions, toArray } from "./convert.ts";
import { arange } from "./creation.ts";
import { multiply } from "./elementwise.ts";
import { takeAlongAxis } from "./indexing.ts";
import { matmul } from "./linalg-core.ts";
import { sum } from "./reduce.ts";
import { broadcastToShape } from "./broadcast.ts";
import { broadcastTo, reshape, squeeze, transpose } from "./shape.ts";

/** A subscript as an ordered string of labels (one per axis) plus its label set. */
interface Term {
  str: string;
  set: Set<string>;
}

const term = (str: string): Term => ({ str, set: new Set(str) });

/** One step of a contraction path: which current operands to combine, into what. */
interface PathStep {
  inputs: Term[];
  output: Term;
  positions: number[];
}

interface PathInfo {
  naiveCost: number;
  naiveScaling: number;
  optimizedCost: number;
  optimizedScaling: number;
}

/** Splits "ij,jk->ik" into inputs and output; the implicit output is the ellipsis (if any)
 *  followed by the labels used exactly once, in alphabetical (ASCII) order. */
function parse(subscripts: string): [string[], string] {
  const s = subscripts.replace(/ /g, "");
  let lhs: string;
  let rhs = "";
  const arrow = s.indexOf("->");
  if (arrow >= 0) {
    lhs = s.slice(0, arrow);
    rhs = s.slice(arrow + 2);
  } else {
    lhs = s;
    const counts = new Map<string, number>();
    for (const c of s.replace(/\.\.\./g, "").replace(/,/g, "")) counts.set(c, (counts.get(c) ?? 0) + 1);
    const once = [...counts].filter(([, n]) => n === 1).map(([c]) => c).sort();
    rhs = (s.includes("...") ? "..." : "") + once.join("");
  }
  const inputs = lhs.split(",");
  // A trailing comma names no operand (std::getline semantics, as MLX).
  if (inputs.length > 1 && inputs[inputs.length - 1] === "") inputs.pop();
  return [inputs, rhs];
}

const isLetter = (c: string) => (c >= "a" && c <= "z") || (c >= "A" && c <= "Z");

function termSize(labels: Iterable<string>, dims: Map<string, number>): number {
  let n = 1;
  for (const c of labels) n *= dims.get(c) ?? 1;
  return n;
}

function flopCount(labels: Set<string>, inner: boolean, numTerms: number, dims: Map<string, number>): number {
  let factor = Math.max(1, numTerms - 1);
  if (inner) factor += 1;
  return termSize(labels, dims) * factor;
}

function costAndScaling(inputs: readonly Term[], output: Term, dims: Map<string, number>): [number, number] {
  const all = new Set<string>();
  for (const t of inputs) for (const c of t.set) all.add(c);
  const inner = [...all].some((c) => !output.set.has(c));
  return [flopCount(all, inner, inputs.length, dims), all.size];
}

/**
 * NumPy's greedy path: repeatedly contract the pair that removes the most elements (then the
 * cheapest), skipping outer products while any other pair exists, never exceeding the naive
 * cost or the memory limit.
 */
function greedyPath(start: Term[], output: Term, dims: Map<string, number>, costLimit: number, memoryLimit: number): [PathStep[], number, number] {
  interface Candidate {
    removed: number;
    cost: number;
    result: Set<string>;
    dims: number;
    x: number;
    y: number;
  }
  let inputs = [...start];
  const path: PathStep[] = [];
  let pathCost = 0;
  let pathScaling = 0;
  let known: Candidate[] = [];
  const consider = (x: number, y: number, into: Candidate[]) => {
    const contracted = new Set([...inputs[x]!.set, ...inputs[y]!.set]);
    const result = new Set<string>();
    inputs.forEach((t, i) => {
      if (i === x || i === y) return;
      for (const c of t.set) if (contracted.has(c)) result.add(c);
    });
    for (const c of output.set) if (contracted.has(c)) result.add(c);
    const newSize = termSize(result, dims);
    if (newSize > memoryLimit) return;
    const removed = termSize(inputs[x]!.set, dims) + termSize(inputs[y]!.set, dims) - newSize;
    const cost = flopCount(contracted, contracted.size > result.size, 2, dims);
    if (pathCost + cost > costLimit) return;
    into.push({ removed, cost, result, dims: contracted.size, x, y });
  };
  const disjoint = (a: Set<string>, b: Set<string>) => ![...a].some((c) => b.has(c));
  let pairs: [number, number][] = [];
  for (let i = 0; i < inputs.length; i++) for (let j = i + 1; j < inputs.length; j++) pairs.push([i, j]);
  const rounds = inputs.length - 1;
  for (let round = 0; round < rounds; round++) {
    for (const [x, y] of pairs) if (!disjoint(inputs[x]!.set, inputs[y]!.set)) consider(x, y, known);
    if (known.length === 0) {
      // Only outer products are left: allow them.
      for (let i = 0; i < inputs.length; i++) for (let j = i + 1; j < inputs.length; j++) consider(i, j, known);
    }
    if (known.length === 0) {
      // Nothing fits the limits: finish with one naive contraction of everything that is left.
      const [cost, scaling] = costAndScaling(inputs, output, dims);
      path.push({ inputs, output, positions: inputs.map((_, i) => i) });
      pathCost += cost;
      pathScaling = Math.max(pathScaling, scaling);
      break;
    }
    let best = known[0]!;
    for (const c of known) {
      if (c.removed > best.removed || (c.removed === best.removed && c.cost < best.cost)) best = c;
    }
    pathScaling = Math.max(pathScaling, best.dims);
    // Intermediate labels: smaller dimensions first (ties alphabetical), which only affects layout.
    const str = [...best.result].sort((p, q) => dims.get(p)! - dims.get(q)! || (p < q ? -1 : p > q ? 1 : 0)).join("");
    const made = term(str);
    path.push({ inputs: [inputs[best.x]!, inputs[best.y]!], output: made, positions: [best.x, best.y] });
    inputs = inputs.filter((_, i) => i !== best.x && i !== best.y);
    inputs.push(made);
    // Keep the candidates that do not involve the contracted pair, renumbered.
    const shift = (i: number) => i - (i > best.x ? 1 : 0) - (i > best.y ? 1 : 0);
    known = known
      .filter((c) => c.x !== best.x && c.x !== best.y && c.y !== best.x && c.y !== best.y)
      .map((c) => ({ ...c, x: shift(c.x), y: shift(c.y) }));
    pairs = [];
    for (let i = 0; i < inputs.length - 1; i++) pairs.push([i, inputs.length - 1]);
    pathCost += best.cost;
  }
  return [path, pathCost, pathScaling];
}

/** Parses, validates and plans a contraction (shared by einsum and einsumPath). */
function plan(subscripts: string, operands: readonly MgArray[], op: string): [PathStep[], PathInfo] {
  if (typeof subscripts !== "string") throw new TypeError(`[${op}] subscripts must be a string.`);
  if (operands.length === 0) throw new Error(`[${op}] At least one operand is required.`);
  const [ins, outRaw] = parse(subscripts);
  if (operands.length !== ins.length) {
    throw new Error(`[${op}] Number of operands, ${operands.length}, does not match number of input subscripts, ${ins.length}`);
  }
  // Ellipses expand to labels the subscripts do not use, taken from the end of a-z A-Z so that
  // operands with fewer dimensions line up on the right (broadcasting).
  const used = new Set(subscripts);
  let spare = "";
  for (const c of "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") if (!used.has(c)) spare += c;
  let maxEllipsis = 0;
  const expand = (sub: string, operand: MgArray | null, index: number): string => {
    let have = false;
    let before = 0;
    let after = 0;
    for (let i = 0; i < sub.length; i++) {
      if (!isLetter(sub[i]!)) {
        if (sub.slice(i, i + 3) !== "...") throw new Error(`[${op}] Subscripts must be letters, but got '${sub[i]}'.`);
        if (have) throw new Error(`[${op}] Only one ellipsis per subscript is allowed but found more in '${sub}'.`);
        have = true;
        i += 2;
        continue;
      }
      if (have) after++;
      else before++;
    }
    if (!have) return sub;
    let len: number;
    if (operand) {
      len = operand.ndim - before - after;
      if (len < 0) {
        throw new Error(
          `[${op}] Operand ${index} with shape ${formatShape(operand.shape)} has insufficient dimensions for subscript '${sub}'. The ellipsis requires at least ${before + after} dimensions but the operand has ${operand.ndim} dimensions.`,
        );
      }
      maxEllipsis = Math.max(maxEllipsis, len);
    } else len = maxEllipsis;
    if (len > spare.length) throw new Error(`[${op}] Too many dimensions under the ellipsis (${len}); not enough unused labels.`);
    return sub.slice(0, before) + spare.slice(spare.length - len) + sub.slice(before + 3);
  };
  const inSubs = ins.map((s, i) => expand(s, operands[i]!, i));
  const outSub = expand(outRaw, null, -1);
  const output = term(outSub);
  if (output.set.size !== outSub.length) throw new Error(`[${op}] Repeat indices not allowed in output.`);

  const dims = new Map<string, number>();
  const inputs: Term[] = [];
  inSubs.forEach((sub, i) => {
    const x = operands[i]!;
    inputs.push(term(sub));
    if (sub.length !== x.ndim) {
      throw new Error(`[${op}] Invalid number of subscripts ${sub.length} for input ${i} with ${x.ndim} dimensions.`);
    }
    const local = new Map<string, number>();
    for (let j = 0; j < sub.length; j++) {
      const c = sub[j]!;
      const d = x.shape[j]!;
      const seen = local.get(c);
      if (seen !== undefined && seen !== d) {
        throw new Error(`[${op}] Dimensions of repeated subscripts do not have the same size (${seen} != ${d}).`);
      }
      local.set(c, d);
      const prev = dims.get(c);
      if (prev !== undefined && d !== 1 && prev !== 1 && prev !== d) {
        throw new Error(`[${op}] Cannot broadcast dimension ${j} of input ${i} with shape ${formatShape(x.shape)} to size ${prev}.`);
      }
      dims.set(c, Math.max(prev ?? d, d));
    }
  });
  for (const c of outSub) {
    if (!dims.has(c)) throw new Error(`[${op}] Output subscript '${c}' does not appear in any input.`);
  }

  let maxSize = termSize(outSub, dims);
  for (const s of inSubs) maxSize = Math.max(maxSize, termSize(s, dims));
  const [naiveCost, naiveScaling] = costAndScaling(inputs, output, dims);
  if (inputs.length <= 2) {
    return [[{ inputs, output, positions: inputs.map((_, i) => i) }], { naiveCost, naiveScaling, optimizedCost: naiveCost, optimizedScaling: naiveScaling }];
  }
  const [path, optimizedCost, optimizedScaling] = greedyPath(inputs, output, dims, naiveCost, maxSize);
  path[path.length - 1]!.output = output;
  return [path, { naiveCost, naiveScaling, optimizedCost, optimizedScaling }];
}

/** The diagonal of `x` over axes p < q: keeps p, removes q (take_along_axis, so gradients flow). */
function diagonalOf(x: MgArray, p: number, q: number, opts: StreamOptions): MgArray {
  const n = x.shape[p]!;
  const iota = reshape(arange(0, n, 1, uint32, opts), x.shape.map((_, i) => (i === p ? n : 1)), opts);
  const index = broadcastTo(iota, x.shape.map((d, i) => (i === q ? 1 : d)), opts);
  return squeeze(takeAlongAxis(x, index, q, opts), q, opts);
}

/** Collapses repeated labels of one operand to their diagonal ("ii" → "i"). */
function collapseRepeats(x: MgArray, t: Term, opts: StreamOptions): [MgArray, Term] {
  let labels = [...t.str];
  for (let j = labels.length - 1; j >= 0; j--) {
    const first = labels.indexOf(labels[j]!);
    if (first < j) {
      x = diagonalOf(x, first, j, opts);
      labels.splice(j, 1);
    }
  }
  return [x, term(labels.join(""))];
}

/** MLX's preprocessing of one path step: diagonals, then sum labels only one operand has. */
function preprocess(step: PathStep, operands: MgArray[], opts: StreamOptions): void {
  step.inputs.forEach((t, i) => {
    if (t.set.size < t.str.length) {
      const [x, collapsed] = collapseRepeats(operands[step.positions[i]!]!, t, opts);
      operands[step.positions[i]!] = x;
      step.inputs[i] = collapsed;
    }
  });
  const counts = new Map<string, number>();
  for (const t of step.inputs) for (const c of t.set) counts.set(c, (counts.get(c) ?? 0) + 1);
  for (const c of step.output.set) counts.set(c, (counts.get(c) ?? 0) + 1);
  step.inputs.forEach((t, i) => {
    const axes = [...t.str].flatMap((c, ax) => (counts.get(c) === 1 ? [ax] : []));
    if (axes.length === 0) return;
    const pos = step.positions[i]!;
    operands[pos] = sum(operands[pos]!, axes, false, opts);
    step.inputs[i] = term([...t.str].filter((_, ax) => !axes.includes(ax)).join(""));
  });
}

/**
 * A pairwise contraction as one batched matmul: (batch, a-only, summed) @ (batch, summed, b-only).
 * Size-1 batch and summed axes broadcast against the other operand first.
 */
function contractPair(a: MgArray, ta: Term, b: MgArray, tb: Term, out: Term, opts: StreamOptions): MgArray {
  const contract = [...ta.str].filter((c) => !out.set.has(c));
  const batch = [...ta.str].filter((c) => out.set.has(c) && tb.set.has(c));
  const freeA = [...ta.str].filter((c) => out.set.has(c) && !tb.set.has(c));
  const freeB = [...tb.str].filter((c) => out.set.has(c) && !ta.set.has(c));
  const dimOf = (x: MgArray, t: Term, c: string) => x.shape[t.str.indexOf(c)]!;
  const shared = [...contract, ...batch];
  const targetA = [...ta.str].map((c, i) => (shared.includes(c) ? Math.max(a.shape[i]!, dimOf(b, tb, c)) : a.shape[i]!));
  const targetB = [...tb.str].map((c, i) => (shared.includes(c) ? Math.max(b.shape[i]!, dimOf(a, ta, c)) : b.shape[i]!));
  a = broadcastToShape(a, targetA, "einsum", opts.stream);
  b = broadcastToShape(b, targetB, "einsum", opts.stream);
  const size = (x: MgArray, t: Term, cs: string[]) => cs.reduce((n, c) => n * dimOf(x, t, c), 1);
  const axesOf = (t: Term, cs: string[]) => cs.map((c) => t.str.indexOf(c));
  const batchShape = batch.map((c) => dimOf(a, ta, c));
  const lhs = reshape(transpose(a, [...axesOf(ta, batch), ...axesOf(ta, freeA), ...axesOf(ta, contract)], opts), [...batchShape, size(a, ta, freeA), size(a, ta, contract)], opts);
  const rhs = reshape(transpose(b, [...axesOf(tb, batch), ...axesOf(tb, contract), ...axesOf(tb, freeB)], opts), [...batchShape, size(b, tb, contract), size(b, tb, freeB)], opts);
  const labels = [...batch, ...freeA, ...freeB];
  const shape = [...batchShape, ...freeA.map((c) => dimOf(a, ta, c)), ...freeB.map((c) => dimOf(b, tb, c))];
  const r = reshape(matmul(lhs, rhs, opts), shape, opts);
  return transpose(r, [...out.str].map((c) => labels.indexOf(c)), opts);
}

/** Aligns every operand on one label order, multiplies (broadcasting) and sums what the output
 *  does not keep. */
function naive(inputs: readonly Term[], output: Term, xs: readonly MgArray[], opts: StreamOptions): MgArray {
  const order: string[] = [];
  for (const t of inputs) for (const c of t.str) if (!order.includes(c)) order.push(c);
  let out: MgArray | null = null;
  inputs.forEach((t, i) => {
    let x = xs[i]!;
    // Append size-1 axes for the labels x lacks, then permute into `order`.
    const labels = [...t.str, ...order.filter((c) => !t.set.has(c))];
    x = reshape(x, [...x.shape, ...new Array<number>(order.length - t.str.length).fill(1)], opts);
    x = transpose(x, order.map((c) => labels.indexOf(c)), opts);
    out = out ? multiply(out, x, opts) : x;
  });
  let r = out!;
  const summed = order.flatMap((c, ax) => (output.set.has(c) ? [] : [ax]));
  const kept = order.filter((c) => output.set.has(c));
  if (summed.length > 0) r = sum(r, summed, false, opts);
  return transpose(r, [...output.str].map((c) => kept.indexOf(c)), opts);
}

/**
 * Einstein summation, as mx.einsum(subscripts, *operands): e.g. "ij,jk->ik" (matmul), "ii->i"
 * (diagonal), "...ij,...jk" (batched, implicit output), "i,j->ij" (outer). A trailing options
 * object may carry `stream`.
 * @example
 * mg.einsum("ij,jk->ik", mg.array([[1, 2]]), mg.array([[3], [4]]))
 */
export function einsum(subscripts: string, ...args: (ArrayInput | StreamOptions)[]): MgArray {
  const [inputs, opts] = splitOptions(args);
  let xs = inputs.map((a) => toArray(a, "einsum"));
  const [path] = plan(subscripts, xs, "einsum");
  for (const step of path) {
    preprocess(step, xs, opts);
    const [ta, tb] = step.inputs;
    const canDot = step.inputs.length === 2 && [...ta!.set].some((c) => !step.output.set.has(c));
    let result: MgArray;
    const a = xs[step.positions[0]!]!;
    if (canDot && isInexact(a.dtype) && isInexact(xs[step.positions[1]!]!.dtype)) {
      result = contractPair(a, ta!, xs[step.positions[1]!]!, tb!, step.output, opts);
    } else {
      // Integer operands have no matmul (MLX restricts it to inexact types): multiply and sum.
      result = naive(step.inputs, step.output, step.positions.map((p) => xs[p]!), opts);
    }
    const drop = new Set(step.positions);
    xs = [...xs.filter((_, i) => !drop.has(i)), result];
  }
  return xs[0]!;
}

/**
 * The contraction order einsum uses and a summary of its cost, as mx.einsum_path: a list of the
 * operand positions combined at each step (positions refer to the current operand list, where
 * each result is appended at the end) and a printable report.
 * @example
 * mg.einsumPath("ij,jk,kl->il", mg.ones([2, 3]), mg.ones([3, 4]), mg.ones([4, 5]))[0]
 */
export function einsumPath(subscripts: string, ...operands: ArrayInput[]): [number[][], string] {
  const xs = operands.map((a) => toArray(a, "einsum_path"));
  const [path, info] = plan(subscripts, xs, "einsum_path");
  const report =
    `  Complete contraction:  ${subscripts}\n` +
    `         Naive scaling:  ${info.naiveScaling}\n` +
    `     Optimized scaling:  ${info.optimizedScaling}\n` +
    `      Naive FLOP count:  ${info.naiveCost}\n` +
    `  Optimized FLOP count:  ${info.optimizedCost}\n`;
  return [path.map((s) => s.positions), report];
}
