// ts/nn/layers/dropout.ts against MLX's numbers (test/fixtures/mlx-nn/layers.json).
import { layerTests } from "../layer-cases.ts";

layerTests(["Dropout", "Dropout2d", "Dropout3d"]);
