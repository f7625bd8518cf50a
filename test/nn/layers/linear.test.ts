// ts/nn/layers/linear.ts against MLX's numbers (test/fixtures/mlx-nn/layers.json).
import { layerTests } from "../layer-cases.ts";

layerTests(["Linear", "Bilinear", "Identity"]);
