// ts/nn/module.ts: MLX's Module API, with expectations taken from MLX 0.32.4 on the same model
// (parameter names, module order, freezing, update and load errors).
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";

class M extends mg.nn.Module {
  declare l1: mg.nn.Linear;
  declare blocks: [mg.nn.Sequential, { x: mg.nn.LayerNorm }];
  readonly cfg = [1, 2];
  declare scale: mg.MgArray;
  constructor() {
    super();
    this.l1 = new mg.nn.Linear(2, 3);
    this.blocks = [new mg.nn.Sequential(new mg.nn.Linear(3, 3), new mg.nn.ReLU()), { x: new mg.nn.LayerNorm(3) }];
    this.scale = mg.array(2.0, mg.float32);
  }
}

const keys = (tree: unknown) => (mg.utils.treeFlatten(tree) as [string, unknown][]).map(([k]) => k);
const allKeys = ["l1.weight", "l1.bias", "blocks.0.layers.0.weight", "blocks.0.layers.0.bias", "blocks.1.x.weight", "blocks.1.x.bias", "scale"];

describe("Module", () => {
  test("parameters use MLX's dotted names; numeric lists are configuration, not members", () => {
    const m = new M();
    expect(keys(m.parameters())).toEqual(allKeys);
    expect(m.has("cfg")).toBe(false);
    expect(m.has("l1")).toBe(true);
    expect(Object.keys(m.parameters())).toEqual(["l1", "blocks", "scale"]);
  });

  test("modules, namedModules, children and leafModules in MLX's order", () => {
    const m = new M();
    expect(m.namedModules().map(([k]) => k)).toEqual(["", "blocks.1.x", "blocks.0", "blocks.0.layers.1", "blocks.0.layers.0", "l1"]);
    expect(m.modules().length).toBe(6);
    expect(mg.utils.treeFlatten(m.children(), "", mg.nn.Module.isModule).map(([k]) => k)).toEqual(["l1", "blocks.0", "blocks.1.x"]);
    expect(mg.utils.treeFlatten(m.leafModules(), "", mg.nn.Module.isModule).map(([k]) => k)).toEqual([
      "l1", "blocks.0.layers.0", "blocks.0.layers.1", "blocks.1.x",
    ]);
  });

  test("prints as MLX does", () => {
    expect(String(new M())).toBe(
      [
        "M(",
        "  (l1): Linear(input_dims=2, output_dims=3, bias=true)",
        "  (blocks.0): Sequential(",
        "    (layers.0): Linear(input_dims=3, output_dims=3, bias=true)",
        "    (layers.1): ReLU()",
        "  )",
        "  (blocks.1.x): LayerNorm(3, eps=0.00001, affine=true)",
        ")",
      ].join("\n"),
    );
  });

  test("freeze / unfreeze with keys, recurse and strict", () => {
    const m = new M();
    m.freeze();
    expect(keys(m.trainableParameters())).toEqual([]);
    m.unfreeze({ keys: ["bias"] });
    expect(keys(m.trainableParameters())).toEqual(["l1.bias", "blocks.0.layers.0.bias", "blocks.1.x.bias"]);
    m.unfreeze();
    m.freeze({ recurse: false });
    expect(keys(m.trainableParameters())).toEqual(allKeys.slice(0, -1));
    expect(() => m.freeze({ keys: "nope", strict: true })).toThrow("[freeze] Module doesn't contain member nope.");
    expect(() => m.freeze({ key: "bias" } as never)).toThrow("[Module.freeze] unknown option 'key' (did you mean 'keys'?). Accepted options: 'recurse', 'keys', 'strict'.");
    const bn = new mg.nn.BatchNorm(3);
    bn.unfreeze();
    expect(keys(bn.trainableParameters())).toEqual(["weight", "bias"]);
  });

  test("update replaces arrays (strict by default) and apply / setDtype map them", () => {
    const m = new M();
    const w = mg.zeros([3, 2]);
    m.update({ l1: { weight: w } });
    expect(m.l1.weight).toBe(w);
    expect(() => m.update({ nope: mg.array(1) })).toThrow('[Module.update] Module does not have parameter named "nope".');
    expect(() => m.update({ l1: { weight: 3 } })).toThrow("[Module.update] Received invalid type: number.");
    m.update({ nope: mg.array(1) }, { strict: false });
    m.setDtype(mg.float16);
    expect(m.l1.weight.dtype).toBe(mg.float16);
    expect(m.scale.dtype).toBe(mg.float16);
    m.apply((x) => mg.astype(x, mg.float32), (_mod, k) => k === "bias" || k === "l1");
    // The filter sees each module's own keys: "l1" lets the walk in, "bias" selects the array.
    expect(m.l1.bias!.dtype).toBe(mg.float32);
    expect(m.l1.weight.dtype).toBe(mg.float16);
    expect(m.blocks[1].x.weight!.dtype).toBe(mg.float16);
  });

  test("updateModules swaps submodules", () => {
    const m = new M();
    const fresh = new mg.nn.Linear(2, 3, false);
    m.updateModules({ l1: fresh, blocks: [{}, { x: new mg.nn.RMSNorm(3) }] });
    expect(m.l1).toBe(fresh);
    expect(m.blocks[1].x).toBeInstanceOf(mg.nn.RMSNorm);
    expect(() => m.updateModules({ nope: fresh })).toThrow('[Module.update_modules] Module does not have sub-module named "nope".');
  });

  test("loadWeights checks names and shapes like MLX (strict), or loads what it gets", () => {
    const m = new M();
    expect(() => m.loadWeights([["l1.weight", mg.zeros([3, 2])]])).toThrow(
      "[load_weights] Missing 6 parameters: \nblocks.0.layers.0.bias,\nblocks.0.layers.0.weight,\nblocks.1.x.bias,\nblocks.1.x.weight,\nl1.bias,\nscale.",
    );
    const full = m.namedParameters().map(([k, v]): [string, mg.MgArray] => [k, mg.zerosLike(v)]);
    expect(() => m.loadWeights([...full, ["extra", mg.zeros([1])]])).toThrow("[load_weights] Received 1 parameters not in model: \nextra.");
    full[0] = ["l1.weight", mg.zeros([2, 2])];
    expect(() => m.loadWeights(full)).toThrow("[load_weights] Expected shape (3,2) but received shape (2,2) for parameter l1.weight");
    m.loadWeights([["l1.weight", mg.ones([3, 2])]], false);
    expect(m.l1.weight.tolist()).toEqual([[1, 1], [1, 1], [1, 1]]);
    m.loadWeights({ "l1.bias": mg.full([3], 2, mg.float32) }, { strict: false });
    expect(m.l1.bias!.tolist()).toEqual([2, 2, 2]);
  });

  test("saveWeights writes .safetensors and .npz that loadWeights (and mg.load) read back by MLX's names", () => {
    const dir = `${require("node:os").tmpdir()}/mg-weights-${process.pid}`;
    require("node:fs").mkdirSync(dir, { recursive: true });
    const m = new M();
    m.update({ l1: { weight: mg.array([[1, 2], [3, 4], [5, 6]], mg.float32) } });
    for (const ext of ["safetensors", "npz"]) {
      const file = `${dir}/m.${ext}`;
      m.saveWeights(file);
      const loaded = mg.load(file) as Record<string, mg.MgArray>;
      expect(Object.keys(loaded).sort()).toEqual(m.namedParameters().map(([k]) => k).sort());
      const fresh = new M();
      fresh.loadWeights(file);
      expect(fresh.l1.weight.tolist()).toEqual([[1, 2], [3, 4], [5, 6]]);
    }
    expect(() => m.saveWeights(`${dir}/m.bin`)).toThrow("[save_weights] Unsupported file extension");
    mg.save(`${dir}/one.npy`, mg.zeros([2]));
    expect(() => m.loadWeights(`${dir}/one.npy`)).toThrow("[load_weights]");
    require("node:fs").rmSync(dir, { recursive: true, force: true });
  });

  test("train / eval set every module's mode", () => {
    const m = new M();
    expect(m.training).toBe(true);
    m.eval();
    expect(m.blocks[0].training).toBe(false);
    m.train();
    expect(m.blocks[1].x.training).toBe(true);
  });

  test("arrays stored by update outlive tidy", () => {
    const m = new mg.nn.Linear(2, 2);
    mg.tidy(() => {
      m.update({ weight: mg.ones([2, 2]) });
    });
    expect(m.weight.disposed).toBe(false);
    expect(mg.sum(m.weight).item()).toBe(4);
  });

  test("a module without forward says so", () => {
    expect(() => new mg.nn.Module().forward()).toThrow("[Module] Module does not define forward().");
  });

  test("constructors take MLX's positional parameters, then options; unknown options are errors", () => {
    const conv = new mg.nn.MaxPool2d(3, { stride: 2, padding: 1 });
    expect(String(conv)).toBe("MaxPool2d(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))");
    expect(() => new mg.nn.Linear(2, 3, { bias: false, biased: true } as never)).toThrow("[Linear] unknown option 'biased' (did you mean 'bias'?). Accepted options: 'bias'.");
    expect(() => new mg.nn.LayerNorm(3, { eps: 0 })).toThrow("[LayerNorm] 'eps' must be positive but got 0.");
    expect(() => new mg.nn.Dropout(1)).toThrow("[Dropout] The dropout probability 1 is not in [0, 1)");
    expect(() => new mg.nn.GroupNorm(4, 6)).toThrow("[GroupNorm] The number of features (6) must be evenly divisible by the number of groups (4).");
    expect(() => new mg.nn.MultiHeadAttention(6, 4)).toThrow("[MultiHeadAttention] The input feature dimensions should be divisible by the number of heads (6 % 4) != 0");
    expect(() => new mg.nn.MaxPool2d([2, 2, 2])).toThrow("[MaxPool2d] 'kernel_size' must be an integer or a tuple containing 2 integers");
    expect(() => new mg.nn.Upsample(2, "area" as never)).toThrow("[Upsample] Got unsupported upsampling algorithm: area");
    expect(() => new mg.nn.RoPE(3).forward(mg.zeros([1, 2, 4]))).toThrow("[rope]");
    expect(() => new mg.nn.RoPE(4).forward(mg.zeros([2, 4]))).toThrow("[rope] Input must have at least 3 dimensions but got input with 2 dimensions.");
  });
});
