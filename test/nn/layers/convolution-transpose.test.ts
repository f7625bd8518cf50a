// ts/nn/layers/convolution-transpose.ts against MLX's numbers (test/fixtures/mlx-nn/layers.json).
import { layerTests } from "../layer-cases.ts";

layerTests(["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]);
