// The header a fused kernel compiles with (ts/backend/gpu/fused-header.ts): elementwise_ops.h cut
// into its declarations, of which a region keeps those its functors need, transitively.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import * as mg from "../../../ts/index.ts";
import { fusedHeader, neededDeclarations, splitDeclarations } from "../../../ts/backend/gpu/fused-header.ts";
import { KERNEL_DIR } from "../../../ts/backend/gpu/kernels.ts";
import { expectDevicesAgree, input } from "./harness.ts";

const raw = readFileSync(resolve(KERNEL_DIR, "elementwise_ops.h"), "utf8").replace(/^#include "utils.h"$/m, "");
const code = (text: string) => text.split("\n").map((l) => l.replace(/\/\/.*$/, "").trimEnd()).filter((l) => l.trim() !== "" && !/^#pragma once/.test(l));

describe("splitDeclarations", () => {
  const decls = splitDeclarations(raw)!;

  test("cuts elementwise_ops.h into declarations that hold every line of its code, in order", () => {
    expect(decls).not.toBeNull();
    expect(code(decls.map((d) => d.text).join("\n"))).toEqual(code(raw));
    const names = (n: string) => decls.filter((d) => d.defines.includes(n)).length;
    expect([names("Exp"), names("log1p_impl"), names("FloatToInt"), names("Cast"), names("MG_FLOAT_UNARY")]).toEqual([1, 2, 4, 4, 1]);
    expect(decls.filter((d) => d.owner === "Tanh").length).toBe(1); // its complex64 member, defined out of line
  });

  test("keeps what a functor names, transitively, and nothing else", () => {
    const kept = (names: string[]) => new Set(neededDeclarations(decls, names).flatMap((d) => [...d.defines, ...(d.owner ? [`${d.owner}::`] : [])]));
    // complex tanh is sinh / cosh: their structs and members come along
    expect([...kept(["Tanh"])].sort()).toEqual(["Cosh", "Cosh::", "MG_FLOAT_UNARY", "Sinh", "Sinh::", "Tanh", "Tanh::"]);
    const cast = kept(["Cast"]);
    for (const n of ["Cast", "FloatToInt", "float_to_int32", "float_to_int64"]) expect(cast.has(n)).toBe(true);
    expect(cast.has("Exp") || cast.has("erf_impl")).toBe(false);
    const erfinv = kept(["ErfInv"]);
    expect(erfinv.has("erfinv_impl") && erfinv.has("erf_impl") && !erfinv.has("Erf")).toBe(true);
  });

  test("a header with conditional compilation is not cut (the whole header is used)", () => {
    expect(splitDeclarations("#if X\nstruct A {};\n#endif\n")).toBeNull();
    expect(splitDeclarations("struct A {\n")).toBeNull();
  });
});

test("fusedHeader: utils.h, then the region's functors; the same functors give the same text", () => {
  const h = fusedHeader(["Exp", "Cast<float>", "Exp"]);
  expect(h).toContain("struct complex64_t"); // utils.h
  expect(h).toContain("MG_FLOAT_UNARY(Exp,");
  expect(h).toContain("template <> struct Cast<bool>");
  expect(h).not.toContain("struct LogAddExp");
  expect(fusedHeader(["Cast<int32_t>", "Exp"])).toBe(h);
});

test("fused regions whose functors need helpers and out-of-line members compile and agree with the CPU", () => {
  const x = input([4, 6], mg.float32, 31, -0.9, 0.9);
  const z = mg.array([{ re: 0.5, im: -0.25 }, { re: -0.75, im: 0.5 }, { re: 0.25, im: 0.75 }, { re: 1, im: 0 }]);
  expectDevicesAgree(() => [
    mg.astype(mg.multiply(mg.add(mg.erfinv(mg.multiply(x, 0.5)), mg.sigmoid(x)), 100), mg.int32),
    mg.logaddexp(mg.log1p(mg.abs(x)), mg.expm1(x)),
    mg.tanh(mg.multiply(z, 0.5)),
    mg.power(mg.add(z, 1), z),
  ], "fused header");
});
