// The main job's command line.
import { describe, expect, test } from "bun:test";
import { ArgsError, parseArgs } from "../../../scripts/job/args.ts";

describe("parseArgs", () => {
  test("defaults: the default device, the preset's steps, seed 0, out/", () => {
    expect(parseArgs([])).toEqual({ device: null, steps: null, seed: 0, quick: false, out: "out", help: false });
  });
  test("every flag, with a separate value or after '='", () => {
    expect(parseArgs(["--device", "gpu", "--steps", "120", "--seed", "7", "--quick", "--out", "/tmp/x"])).toEqual({
      device: "gpu", steps: 120, seed: 7, quick: true, out: "/tmp/x", help: false,
    });
    expect(parseArgs(["--device=cpu", "--steps=5", "--seed=0"])).toMatchObject({ device: "cpu", steps: 5, seed: 0 });
    expect(parseArgs(["-h"]).help).toBe(true);
    expect(parseArgs(["--help"]).help).toBe(true);
  });
  test("bad values are errors naming the flag", () => {
    const cases: [string[], string][] = [
      [["--device", "tpu"], "--device must be 'cpu' or 'gpu', got 'tpu'"],
      [["--device"], "--device must be 'cpu' or 'gpu', got nothing"],
      [["--steps", "0"], "--steps must be an integer ≥ 1, got '0'"],
      [["--steps", "1.5"], "--steps must be an integer ≥ 1, got '1.5'"],
      [["--steps", "ten"], "--steps must be an integer ≥ 1"],
      [["--steps"], "--steps needs a value"],
      [["--steps", "--quick"], "--steps needs a value"],
      [["--seed", "-1"], "--seed must be an integer ≥ 0"],
      [["--out", ""], "--out needs a directory"],
      [["--fast"], "unknown argument '--fast'"],
      [["extra"], "unknown argument 'extra'"],
    ];
    for (const [argv, message] of cases) {
      expect(() => parseArgs(argv)).toThrow(ArgsError);
      expect(() => parseArgs(argv)).toThrow(message);
    }
  });
});
