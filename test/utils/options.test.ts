// ts/utils/options.ts: MLX's positional parameters, the camelCase options object, and its errors.
import { expect, test } from "bun:test";
import { checkOptionNames, resolveOptions } from "../../ts/utils/options.ts";

const defaults = { weights: null as number | null, axis: -1, labelSmoothing: 0, reduction: "none" };

test("positional values, then the options object, over the defaults", () => {
  expect(resolveOptions("f", [], defaults)).toEqual(defaults);
  expect(resolveOptions("f", [null, 0], defaults)).toEqual({ ...defaults, axis: 0 });
  expect(resolveOptions("f", [{ labelSmoothing: 0.1, reduction: "mean" }], defaults)).toEqual({ ...defaults, labelSmoothing: 0.1, reduction: "mean" });
  expect(resolveOptions("f", [undefined, 1, { reduction: "sum" }], defaults)).toEqual({ ...defaults, axis: 1, reduction: "sum" });
  expect(resolveOptions("f", [{ axis: undefined }], defaults)).toEqual(defaults);
  expect(resolveOptions("f", [{ stream: 1 }], defaults, ["stream"]).stream).toBe(1);
});

test("errors name the function, the option and the accepted names", () => {
  expect(() => resolveOptions("cross_entropy", [{ smoothing: 0.1 }], defaults)).toThrow(
    "[cross_entropy] unknown option 'smoothing'. Accepted options: 'weights', 'axis', 'labelSmoothing', 'reduction'.",
  );
  expect(() => resolveOptions("cross_entropy", [{ label_smoothing: 0.1 }], defaults)).toThrow("unknown option 'label_smoothing' (did you mean 'labelSmoothing'?)");
  expect(() => resolveOptions("f", [null, 0, { axis: 1 }], defaults)).toThrow("[f] 'axis' was given both positionally and in the options object.");
  expect(() => resolveOptions("f", [1, 2, 3, 4, 5], defaults)).toThrow("[f] takes at most 4 optional positional arguments (weights, axis, labelSmoothing, reduction), got 5.");
  expect(() => checkOptionNames("g", { a: 1 }, [])).toThrow("[g] unknown option 'a'. Accepted options: none.");
});
