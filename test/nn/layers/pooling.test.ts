// ts/nn/layers/pooling.ts against MLX's numbers (test/fixtures/mlx-nn/layers.json).
import { layerTests } from "../layer-cases.ts";

layerTests(["MaxPool1d", "AvgPool1d", "MaxPool2d", "AvgPool2d", "MaxPool3d", "AvgPool3d"]);
