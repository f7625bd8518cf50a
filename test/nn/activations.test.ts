// ts/nn/activations.ts: the functions and the modules against MLX's numbers.
import { expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { functionTests } from "./function-cases.ts";
import { layerTests } from "./layer-cases.ts";

functionTests("fn_");
layerTests([
  "ReLU", "ReLU2", "ReLU6", "Sigmoid", "Mish", "Softmax", "Softplus", "Softsign", "SiLU", "LogSoftmax", "LogSigmoid", "Tanh", "Hardswish", "SELU",
  "HardTanh", "Softmin", "GLU", "LeakyReLU", "ELU", "CELU", "Softshrink", "HardShrink", "Step", "GELU", "PReLU",
]);

test("every MLX activation exists as a function and a module", () => {
  const functions = [
    "relu", "relu2", "relu6", "leakyRelu", "elu", "selu", "celu", "gelu", "geluApprox", "geluFastApprox", "silu", "sigmoid", "logSigmoid", "softplus",
    "softsign", "softshrink", "hardTanh", "hardShrink", "hardswish", "mish", "prelu", "glu", "tanh", "step", "logSoftmax", "softmax", "softmin",
  ];
  for (const f of functions) expect(typeof (mg.nn as Record<string, unknown>)[f], f).toBe("function");
  expect(new mg.nn.ReLU()).toBeInstanceOf(mg.nn.Module);
  expect(mg.nn.ReLU.name).toBe("ReLU");
  expect(String(new mg.nn.SiLU())).toBe("SiLU()");
});

test("options: camelCase names, unknown names and bad values are errors naming the function", () => {
  const x = mg.array([-1, 2], mg.float32);
  expect(mg.nn.leakyRelu(x, { negativeSlope: 0.5 }).tolist()).toEqual([-0.5, 2]);
  expect(() => mg.nn.leakyRelu(x, { slope: 0.5 } as never)).toThrow("[leaky_relu] unknown option 'slope'. Accepted options: 'negativeSlope'.");
  expect(() => mg.nn.leakyRelu(x, { negative_slope: 0.5 } as never)).toThrow("did you mean 'negativeSlope'?");
  expect(() => mg.nn.elu(x, 1, { alpha: 2 })).toThrow("[elu] 'alpha' was given both positionally and in the options object.");
  expect(() => new mg.nn.GELU("exact" as never)).toThrow("[GELU] The approximation should be in");
  expect(() => new mg.nn.LeakyReLU({ negativeSlop: 1 } as never)).toThrow("[LeakyReLU] unknown option 'negativeSlop'");
});
