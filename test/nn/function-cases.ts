// Runs the fixture cases of functions.json (activations, losses, clipGradNorm) on both devices:
// the TypeScript expression evaluated on MLX's inputs must give MLX's outputs, and the gradients
// of sum(output · cotangent) with respect to the listed inputs must match MLX's.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { decode, DEVICES, type Enc, evalTs, expectClose, loadFixture, type Tolerance } from "./fixtures.ts";

export interface FunctionCase {
  name: string;
  py: string;
  ts: string;
  inputs: Record<string, Enc>;
  output: Enc[];
  cotangents?: Enc[];
  grads?: Record<string, Enc>;
  tol?: Tolerance;
}

const fixtures = new Map<string, { mlx: string; cases: FunctionCase[] }>();
function fixture(name: string) {
  if (!fixtures.has(name)) fixtures.set(name, loadFixture<FunctionCase>(name));
  return fixtures.get(name)!;
}

function outputs(o: unknown): mg.MgArray[] {
  return Array.isArray(o) ? (o as mg.MgArray[]) : [o as mg.MgArray];
}

function runCase(c: FunctionCase): void {
  const inputs = decode(c.inputs) as Record<string, mg.MgArray>;
  const out = outputs(evalTs(c.ts, inputs));
  expect(out.length, `${c.name}: outputs`).toBe(c.output.length);
  out.forEach((o, i) => {
    // clipGradNorm returns [tree, norm]: compare the tree's leaves in order.
    const leaves = o instanceof mg.MgArray ? [o] : (mg.utils.treeFlatten(o) as [string, mg.MgArray][]).map(([, v]) => v);
    const want = Array.isArray(c.output[i]) ? (c.output[i] as unknown as Enc[]) : [c.output[i]!];
    const flatWant = want.flatMap((w) => (Array.isArray(w) ? w : isEncTree(w) ? treeLeaves(w) : [w]));
    expect(leaves.length, `${c.name}: output ${i} leaves`).toBe(flatWant.length);
    leaves.forEach((l, k) => expectClose(l, flatWant[k]!, `${c.name} output ${i}.${k}`, c.tol));
  });
  if (!c.grads) return;
  const names = Object.keys(c.grads);
  const cots = decode(c.cotangents) as mg.MgArray[];
  const f = (...xs: mg.MgArray[]) => {
    const scope = { ...inputs };
    names.forEach((n, k) => (scope[n] = xs[k]!));
    return outputs(evalTs(c.ts, scope))
      .map((o, i) => (mg.isFloating(o.dtype) ? mg.sum(mg.multiply(o, cots[i]!)) : mg.array(0, mg.float32)))
      .reduce((a, b) => mg.add(a, b));
  };
  const g = mg.grad(f, names.map((_, k) => k))(...names.map((n) => inputs[n]!));
  const grads = (names.length === 1 ? [g] : g) as mg.MgArray[];
  const gradTol = c.tol ? { rtol: c.tol.rtol * 5, atol: c.tol.atol * 5 } : { rtol: 1e-4, atol: 1e-4 };
  names.forEach((n, k) => expectClose(grads[k], c.grads![n]!, `${c.name} d/d${n}`, gradTol));
}

function isEncTree(w: unknown): w is Record<string, unknown> {
  return w !== null && typeof w === "object" && !("shape" in w);
}

function treeLeaves(w: unknown): Enc[] {
  if (Array.isArray(w)) return w.flatMap(treeLeaves);
  if (isEncTree(w)) return Object.values(w).flatMap(treeLeaves);
  return [w as Enc];
}

/** Registers the cases of `file` (functions.json …) whose names start with `prefix`, on both devices. */
export function functionTests(prefix: string, file = "functions"): void {
  const { mlx, cases: all } = fixture(file);
  const cases = all.filter((c) => c.name.startsWith(prefix));
  describe(`MLX ${mlx}: ${prefix}*`, () => {
    test("there are cases", () => expect(cases.length).toBeGreaterThan(0));
    for (const device of DEVICES) {
      test.each(cases.map((c) => [c.name, c] as const))(`%s on ${device.type}`, (_name, c) => {
        mg.stream(device, () => runCase(c));
      });
    }
  });
}
