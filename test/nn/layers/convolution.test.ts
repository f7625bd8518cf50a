// ts/nn/layers/convolution.ts against MLX's numbers (test/fixtures/mlx-nn/layers.json).
import { layerTests } from "../layer-cases.ts";

layerTests(["Conv1d", "Conv2d", "Conv3d"]);
