import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { expectClose, gradcheck, randomArray, values } from "./helpers/grad.ts";

/** The implicit output rule: labels used exactly once, in ASCII order. */
function implicitOutput(lhs: string): string {
  const counts = new Map<string, number>();
  for (const c of lhs.replace(/,/g, "")) counts.set(c, (counts.get(c) ?? 0) + 1);
  return [...counts].filter(([, n]) => n === 1).map(([c]) => c).sort().join("");
}

/** Einstein summation by brute force over every label assignment (letters only), float64. */
function refEinsum(subscripts: string, xs: MgArray[]): { v: number[]; shape: number[] } {
  const [lhs, given] = subscripts.includes("->") ? subscripts.split("->") : [subscripts, null];
  const ins = lhs!.split(",");
  const out = given ?? implicitOutput(lhs!);
  const size = new Map<string, number>();
  ins.forEach((s, i) => [...s].forEach((c, j) => size.set(c, Math.max(size.get(c) ?? 1, xs[i]!.shape[j]!))));
  const labels = [...size.keys()];
  const vals = xs.map(values);
  const outShape = [...out].map((c) => size.get(c)!);
  const result = new Array<number>(outShape.reduce((a, b) => a * b, 1)).fill(0);
  const assign = new Map<string, number>(labels.map((c) => [c, 0]));
  const total = labels.reduce((n, c) => n * size.get(c)!, 1);
  for (let t = 0; t < total; t++) {
    let rem = t;
    for (const c of labels) {
      assign.set(c, rem % size.get(c)!);
      rem = Math.floor(rem / size.get(c)!);
    }
    let p = 1;
    ins.forEach((s, i) => {
      let off = 0;
      [...s].forEach((c, j) => {
        const d = xs[i]!.shape[j]!;
        off = off * d + (d === 1 ? 0 : assign.get(c)!);
      });
      p *= vals[i]![off]!;
    });
    let o = 0;
    [...out].forEach((c, j) => (o = o * outShape[j]! + assign.get(c)!));
    result[o]! += p;
  }
  return { v: result, shape: outShape };
}

const SIZES = new Map([..."abcdefghij"].map((c, i) => [c, [2, 3, 4, 5, 2, 3, 4, 5, 2, 3][i]!]));
function inputsFor(subscripts: string, seed: number): MgArray[] {
  return subscripts.split("->")[0]!.split(",").map((s, i) => randomArray([...s].map((c) => SIZES.get(c)!), seed + i));
}

function check(subscripts: string, xs: MgArray[], reference = subscripts, rtol = 1e-12): void {
  const want = refEinsum(reference, xs);
  const got = mg.einsum(subscripts, ...xs);
  expect(got.shape).toEqual(want.shape);
  expectClose(values(got), want.v, rtol, 1e-12);
}

describe("einsum", () => {
  test("single operand: diagonals, traces, reductions, transposes", () => {
    const sq = mg.reshape(mg.arange(16), [4, 4]);
    expect(mg.einsum("ii->i", sq).tolist()).toEqual([0, 5, 10, 15]);
    expect(mg.einsum("ii", sq).item()).toBe(30);
    expect(mg.einsum("ii->i", sq).dtype).toBe(mg.int32);
    expect(mg.einsum("iii->i", mg.reshape(mg.arange(8), [2, 2, 2])).tolist()).toEqual([0, 7]);
    expect(mg.einsum("iii->", mg.reshape(mg.arange(8), [2, 2, 2])).item()).toBe(7);
    const x = mg.reshape(mg.arange(36), [2, 2, 3, 3]);
    check("iijj->ij", [x]);
    const y = mg.reshape(mg.arange(36), [2, 3, 2, 3]);
    check("ijij->ij", [y]);
    check("ijij->j", [y]);
    expect(mg.einsum("ij->", mg.reshape(mg.arange(8), [2, 4])).item()).toBe(28);
    expect(mg.einsum("ij->i", mg.reshape(mg.arange(8), [2, 4])).tolist()).toEqual([6, 22]);
    expect(mg.einsum("ij->j", mg.reshape(mg.arange(8), [2, 4])).tolist()).toEqual([4, 6, 8, 10]);
    expect(mg.einsum("ij", mg.reshape(mg.arange(8), [2, 4])).tolist()).toEqual([[0, 1, 2, 3], [4, 5, 6, 7]]);
    expect(mg.einsum("ji", mg.reshape(mg.arange(6), [2, 3])).tolist()).toEqual([[0, 3], [1, 4], [2, 5]]);
    check("ijk->jki", [randomArray([2, 3, 4], 1)]);
  });

  test("two operands: matmul, transposed matmul, inner, outer, hadamard, medley", () => {
    check("ik,kj", [randomArray([2, 8], 2), randomArray([8, 2], 3)]);
    check("ik,kj->ji", [randomArray([2, 8], 4), randomArray([8, 3], 5)]);
    check("i,i", [randomArray([4], 6), randomArray([4], 7)]);
    check("i,j->ij", [randomArray([4], 8), randomArray([6], 9)]);
    check("ij,ij->ij", [randomArray([2, 8], 10), randomArray([2, 8], 11)]);
    check("abcd,fgda->bfca", [randomArray([2, 8, 3, 5], 12), randomArray([3, 7, 5, 2], 13)]);
    check("ab,bc->c", [randomArray([5, 8], 14), randomArray([8, 2], 15)]);
    // attention-shaped contractions
    const q = randomArray([2, 3, 4, 5], 16), k = randomArray([2, 3, 4, 5], 17);
    check("itjk,iujk->ijtu", [q, k]);
  });

  test("opt_einsum's test cases against brute force", () => {
    const cases = [
      "a,ab,abc->abc", "a,b,ab->ab", "ea,fb,gc,hd,abcd->efgh", "ea,fb,abcd,gc,hd->efgh", "abcd,ea,fb,gc,hd->efgh",
      "acdf,jbje,gihb,hfac,gfac,gifabc,hfac", "cd,bdhe,aidb,hgca,gc,hgibcd,hgac", "abhe,hidj,jgba,hiab,gab",
      "bde,cdh,agdb,hica,ibd,hgicd,hiac", "chd,bde,agbc,hiad,hgc,hgi,hiad", "chd,bde,agbc,hiad,bdi,cgh,agdb", "bdhe,acad,hiab,agac,hibd",
      "ab,ab,c->", "ab,ab,c->c", "ab,ab,cd,cd->", "ab,ab,cd,cd->ac", "ab,ab,cd,cd->cd", "ab,ab,cd,cd,ef,ef->",
      "ab,cd,ef->abcdef", "ab,cd,ef->acdf", "ab,cd,de->abcde", "ab,cd,de->be", "ab,bcd,cd->abcd", "ab,bcd,cd->abd",
      "eb,cb,fb->cef", "dd,fb,be,cdb->cef", "bca,cdb,dbf,afc->", "dcc,fce,ea,dbf->ab", "fdf,cdd,ccd,afe->ae", "abcd,ad",
      "ed,fcd,ff,bcf->be", "baa,dcf,af,cde->be", "bd,db,eac->ace", "fff,fae,bef,def->abd", "efc,dbc,acf,fd->abe",
      "ab,ab", "ab,ba", "abc,abc", "abc,bac", "abc,cba", "ab,bc", "ab,cb", "ba,bc", "ba,cb", "abcd,cd", "abcd,ab",
      "abcd,cdef", "abcd,cdef->feba", "abcd,efdc", "aab,bc->ac", "ab,bcc->ac", "aab,bcc->ac", "baa,bcc->ac", "aab,ccb->ac",
      "aab,fa,df,ecc->bde", "ecb,fef,bad,ed->ac", "bcf,bbb,fbf,fc->", "bb,ff,be->e", "bcb,bb,fc,fff->", "fbb,dfd,fc,fc->",
      "afd,ba,cc,dc->bf", "adb,bc,fa,cfc->d", "bbd,bda,fc,db->acf", "dba,ead,cad->bce", "aef,fbc,dca->bde",
    ];
    cases.forEach((c, i) => check(c, inputsFor(c, 100 + 13 * i), c, 1e-10));
  });

  test("ellipses, including size-1 broadcasting under them", () => {
    const pairs: [string, string][] = [
      ["abc->ab", "...c->..."], ["abcd->ad", "a...d->..."], ["abij,abgj->abig", "...ij,...gj->...ig"],
      ["abij,abgj->abig", "...ij,...gj->..."], ["abhh->abh", "...hh->...h"], ["bch,abcj->abchj", "...h,...j->...hj"],
      ["bc,cd->bd", "...c,cd"], ["abc,acd->bd", "...bc,...cd"], ["abcd,c->abd", "...cd,c"], ["abcd,c->abd", "...cd,c..."],
      ["abcd,c->abd", "...cd,c...->d..."], ["abc,b->abc", "ab...,b...->ab..."], ["abc,b->abc", "ab...,...b->ab..."],
      ["abc,b->abc", "ab...,b->ab..."], ["ab,bc->ac", "ab...,b...->a..."], ["ab,bc->ac", "ab...,...bc->a...c"],
      ["ab,bc->ac", "ab,b...->a..."], ["abcdef,defg->abcg", "...def,defg->...g"],
    ];
    // NumPy's meaning of each ellipsis form, written with letters for the brute-force reference.
    const meaning: Record<string, string> = {
      "...c->...": "abc->ab", "a...d->...": "abcd->bc", "...ij,...gj->...ig": "abij,abgj->abig", "...ij,...gj->...": "abij,abgj->ab",
      "...hh->...h": "abhh->abh", "...h,...j->...hj": "bch,abcj->abchj", "...c,cd": "bc,cd->bd", "...bc,...cd": "abc,acd->abd",
      "...cd,c": "abcd,c->abd", "...cd,c...": "abcd,c->abd", "...cd,c...->d...": "abcd,c->dab", "ab...,b...->ab...": "abc,b->abc",
      "ab...,...b->ab...": "abc,b->abc", "ab...,b->ab...": "abc,b->abc", "ab...,b...->a...": "ab,bc->ac",
      "ab...,...bc->a...c": "ab,bc->ac", "ab,b...->a...": "ab,bc->ac", "...def,defg->...g": "abcdef,defg->abcg",
    };
    pairs.forEach(([shapes, sub], i) => check(sub, inputsFor(shapes, 400 + 7 * i), meaning[sub]!));
    for (const [sa, sb] of [[[1, 3, 4], [2, 4, 5]], [[2, 3, 4], [1, 4, 5]], [[1, 1, 3, 4], [5, 2, 4, 5]], [[5, 1, 3, 4], [1, 2, 4, 5]]]) {
      const xs = [randomArray(sa!, 1), randomArray(sb!, 2)];
      const ref = sa!.length === 3 ? "zij,zjk->zik" : "yzij,yzjk->yzik";
      check("...ij,...jk->...ik", xs, ref);
    }
    check("...i,...i->...", [randomArray([1, 4], 3), randomArray([5, 4], 4)], "zi,zi->z");
    check("bij,bjk->bik", [randomArray([1, 3, 4], 5), randomArray([2, 4, 5], 6)]);
    check("ab,bc->c", [randomArray([5, 1], 7), randomArray([8, 2], 8)]);
    check("abcd,cdab->abcd", [randomArray([5, 1, 3, 1], 9), randomArray([1, 7, 1, 2], 10)]);
  });

  test("integer operands are exact (multiply and sum, no float matmul)", () => {
    const a = mg.array([[1, 2, 3], [4, 5, 6]]);
    const b = mg.array([[7, 8], [9, 10], [11, 12]]);
    const r = mg.einsum("ij,jk->ik", a, b);
    expect(r.dtype).toBe(mg.int32);
    expect(r.tolist()).toEqual([[58, 64], [139, 154]]);
    expect(mg.einsum("i,i", mg.array([2n ** 40n, 3n]), mg.array([2n ** 20n, 1n])).item()).toBe(2n ** 60n + 3n);
  });

  test("a trailing options object is not an operand", () => {
    const r = mg.einsum("ij->ji", mg.ones([2, 3]), { stream: mg.cpu });
    expect(r.shape).toEqual([3, 2]);
  });

  test("errors", () => {
    const x = mg.ones([2, 3]);
    expect(() => mg.einsum("ij")).toThrow("[einsum] At least one operand is required.");
    expect(() => mg.einsum("ij,jk", x)).toThrow("[einsum] Number of operands, 1, does not match number of input subscripts, 2");
    expect(() => mg.einsum("i1", x)).toThrow("[einsum] Subscripts must be letters, but got '1'.");
    expect(() => mg.einsum("a...b...c,a...b...c->abc", mg.ones([2, 3, 4]), mg.ones([2, 3, 4]))).toThrow(
      "[einsum] Only one ellipsis per subscript is allowed but found more in 'a...b...c'.",
    );
    expect(() => mg.einsum("ij->ii", x)).toThrow("[einsum] Repeat indices not allowed in output.");
    expect(() => mg.einsum("ijk", x)).toThrow("[einsum] Invalid number of subscripts 3 for input 0 with 2 dimensions.");
    expect(() => mg.einsum("ii", x)).toThrow("[einsum] Dimensions of repeated subscripts do not have the same size (2 != 3).");
    expect(() => mg.einsum("ij,jk", x, mg.ones([4, 2]))).toThrow("[einsum] Cannot broadcast dimension 0 of input 1 with shape (4,2) to size 3.");
    expect(() => mg.einsum("ab...c", x)).toThrow("[einsum] Operand 0 with shape (2,3) has insufficient dimensions for subscript 'ab...c'.");
    expect(() => mg.einsum("ij->ik", x)).toThrow("[einsum] Output subscript 'k' does not appear in any input.");
  });

  test("gradients through matmul contractions, diagonals and naive products", () => {
    gradcheck((a, b) => mg.einsum("ij,jk->ik", a, b), [randomArray([3, 4], 20), randomArray([4, 2], 21)]);
    gradcheck((a) => mg.einsum("ii->i", a), [randomArray([3, 3], 22)]);
    gradcheck((a, b) => mg.einsum("bij,bjk->bik", a, b), [randomArray([1, 2, 3], 23), randomArray([2, 3, 2], 24)]);
    gradcheck((a, b, c) => mg.einsum("ij,jk,kl->il", a, b, c), [randomArray([2, 3], 25), randomArray([3, 4], 26), randomArray([4, 2], 27)]);
    gradcheck((a, b) => mg.einsum("aab,bc->ac", a, b), [randomArray([2, 2, 3], 28), randomArray([3, 2], 29)]);
  });
});

describe("einsumPath", () => {
  test("trivial paths", () => {
    const a = mg.zeros([5, 5]);
    expect(mg.einsumPath("ii", a)[0]).toEqual([[0]]);
    expect(mg.einsumPath("ij->i", a)[0]).toEqual([[0]]);
    expect(mg.einsumPath("ij,jk", mg.zeros([5, 8]), mg.zeros([8, 3]))[0]).toEqual([[0, 1]]);
    expect(mg.einsumPath("ij,jk -> ijk", mg.zeros([5, 8]), mg.zeros([8, 3]))[0]).toEqual([[0, 1]]);
  });

  test("greedy paths equal NumPy's (values from numpy.einsum_path with optimize='greedy')", () => {
    expect(mg.einsumPath("ij,jk,kl", mg.zeros([5, 8]), mg.zeros([8, 3]), mg.zeros([3, 7]))[0]).toEqual([[0, 1], [0, 1]]);
    expect(mg.einsumPath("ij,jk,kl", mg.zeros([5, 8]), mg.zeros([8, 10]), mg.zeros([10, 7]))[0]).toEqual([[1, 2], [0, 1]]);
    const dims = new Map([..."abcdefghijklmopqABC"].map((c, i) => [c, [2, 3, 4, 5, 4, 3, 2, 6, 5, 4, 3, 2, 5, 7, 4, 3, 2, 3, 4][i]!]));
    const numpyPaths: [string, number[][]][] = [
      ["eb,cb,fb->cef", [[0, 2], [0, 1]]],
      ["dd,fb,be,cdb->cef", [[0, 3], [0, 1], [0, 1]]],
      ["bca,cdb,dbf,afc->", [[1, 2], [0, 2], [0, 1]]],
      ["dcc,fce,ea,dbf->ab", [[1, 2], [0, 1], [0, 1]]],
    ];
    for (const [c, want] of numpyPaths) {
      const xs = c.split("->")[0]!.split(",").map((s) => mg.ones([...s].map((ch) => dims.get(ch)!)));
      expect(mg.einsumPath(c, ...xs)[0]).toEqual(want);
    }
    const more: [string, number[][]][] = [
      ["acdf,jbje,gihb,hfac,gfac,gifabc,hfac", [[3, 6], [3, 4], [2, 4], [2, 3], [0, 2], [0, 1]]],
      ["cd,bdhe,aidb,hgca,gc,hgibcd,hgac", [[3, 6], [2, 4], [3, 4], [1, 3], [0, 2], [0, 1]]],
      ["abhe,hidj,jgba,hiab,gab", [[2, 4], [0, 2], [1, 2], [0, 1]]],
      ["ab,ab,cd,cd->ac", [[2, 3], [0, 1], [0, 1]]],
    ];
    for (const [c, want] of more) expect(mg.einsumPath(c, ...inputsFor(c, 1))[0]).toEqual(want);
  });

  test("the report names the contraction and its costs", () => {
    const [, report] = mg.einsumPath("ij,jk,kl", mg.zeros([5, 8]), mg.zeros([8, 10]), mg.zeros([10, 7]));
    expect(report).toContain("  Complete contraction:  ij,jk,kl\n");
    expect(report).toContain("         Naive scaling:  4\n");
    expect(report).toContain("     Optimized scaling:  3\n");
    // naive: all of i,j,k,l (5·8·10·7 = 2800) × (3 − 1 + 1 inner) = 8400;
    // greedy: jk,kl (8·10·7 = 560 × 2) then ij,jl (5·8·7 = 280 × 2) = 1680
    expect(report).toContain("      Naive FLOP count:  8400\n");
    expect(report).toContain("  Optimized FLOP count:  1680\n");
    expect(() => mg.einsumPath("ij")).toThrow("[einsum_path] At least one operand is required.");
  });
});
