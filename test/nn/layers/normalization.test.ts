// ts/nn/layers/normalization.ts against MLX's numbers (test/fixtures/mlx-nn/layers.json).
import { layerTests } from "../layer-cases.ts";

layerTests(["LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm", "BatchNorm"]);
