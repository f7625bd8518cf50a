// ts/nn/layers/positional-encoding.ts against MLX's numbers (test/fixtures/mlx-nn/layers.json).
import { layerTests } from "../layer-cases.ts";

layerTests(["RoPE", "SinusoidalPositionalEncoding", "ALiBi"]);
