// ts/nn/layers/recurrent.ts against MLX's numbers (test/fixtures/mlx-nn/layers.json).
import { layerTests } from "../layer-cases.ts";

layerTests(["RNN", "GRU", "LSTM"]);
