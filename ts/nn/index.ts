// mg.nn, as mlx.nn: Module, layers, activations, losses, init, valueAndGrad.
// Every function that builds arrays is a library call (ts/core/ownership.ts): what it creates and
// does not return is freed after its last use; built-in layers' forward methods are wrapped where
// they are defined. Quantized layers (QuantizedLinear, QuantizedEmbedding, nn.quantize) are in
// layers/quantized.ts, which gives Linear and Embedding their toQuantized() method. Functions go
// through the options helper (ts/core/options.ts).
import { publicFunction, publicNamespace } from "../core/options.ts";
import * as activations from "./activations.ts";
import * as lossFunctions from "./losses.ts";
import * as initializers from "./init.ts";
import * as upsampling from "./layers/upsample.ts";
import * as quantizedLayers from "./layers/quantized.ts";

export { Module } from "./module.ts";
export type { FreezeOptions, ModuleFilter } from "./module.ts";
import { checkpoint as checkpointImpl, valueAndGrad as valueAndGradImpl } from "./transforms.ts";
// The transforms return library calls; making one builds no arrays.
export const checkpoint = publicFunction("nn.checkpoint", checkpointImpl, { library: false });
export const valueAndGrad = publicFunction("nn.valueAndGrad", valueAndGradImpl, { library: false });
export const {
  celu, elu, gelu, geluApprox, geluFastApprox, glu, hardShrink, hardTanh, hardswish, leakyRelu, logSigmoid, logSoftmax, mish, prelu,
  relu, relu2, relu6, selu, sigmoid, silu, softmax, softmin, softplus, softshrink, softsign, step, tanh,
} = publicNamespace("nn.", activations);
export {
  CELU, ELU, GELU, GLU, HardShrink, Hardswish, HardTanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish, PReLU, ReLU, ReLU2, ReLU6, SELU, Sigmoid,
  SiLU, Softmax, Softmin, Softplus, Softshrink, Softsign, Step, Tanh,
} from "./activations.ts";
export type { GeluApprox } from "./activations.ts";
export { Bilinear, Identity, Linear } from "./layers/linear.ts";
export { Sequential } from "./layers/containers.ts";
export { Embedding } from "./layers/embedding.ts";
export { Dropout, Dropout2d, Dropout3d } from "./layers/dropout.ts";
export { BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RMSNorm } from "./layers/normalization.ts";
export { ALiBi, RoPE, SinusoidalPositionalEncoding } from "./layers/positional-encoding.ts";
export {
  MultiHeadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
} from "./layers/transformer.ts";
export type { Activation } from "./layers/transformer.ts";
export { GRU, LSTM, RNN } from "./layers/recurrent.ts";
export { Conv1d, Conv2d, Conv3d } from "./layers/convolution.ts";
export { ConvTranspose1d, ConvTranspose2d, ConvTranspose3d } from "./layers/convolution-transpose.ts";
export { AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d } from "./layers/pooling.ts";
export { Upsample } from "./layers/upsample.ts";
export type { UpsampleMode } from "./layers/upsample.ts";
export const { upsampleCubic, upsampleLinear, upsampleNearest } = publicNamespace("nn.", {
  upsampleCubic: upsampling.upsampleCubic, upsampleLinear: upsampling.upsampleLinear, upsampleNearest: upsampling.upsampleNearest,
});
/** The losses of mlx.nn.losses. */
export const losses = publicNamespace("nn.losses.", lossFunctions);
/** The initializers of mlx.nn.init (each returns an initializer, itself a library call). */
export const init = publicNamespace("nn.init.", initializers);
export type { Reduction } from "./losses.ts";
export type { FanMode, Initializer } from "./init.ts";
export { QuantizedEmbedding, QuantizedLinear } from "./layers/quantized.ts";
/** nn.quantize(model, groupSize, bits, { mode, quantizeInput, classPredicate }), as mlx.nn.quantize. */
export const { quantize } = publicNamespace("nn.", { quantize: quantizedLayers.quantizeModel });
