// mg.nn, as mlx.nn: Module, layers, activations, losses, init, valueAndGrad.
// Quantized layers (QuantizedLinear, QuantizedEmbedding, nn.quantize) come with quantization
// (issue 15): a layer that can be quantized gains a toQuantized() method there.
export { Module } from "./module.ts";
export type { FreezeOptions, ModuleFilter } from "./module.ts";
export { checkpoint, valueAndGrad } from "./transforms.ts";
export * from "./activations.ts";
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
export { Upsample, upsampleCubic, upsampleLinear, upsampleNearest } from "./layers/upsample.ts";
export type { UpsampleMode } from "./layers/upsample.ts";
export * as losses from "./losses.ts";
export * as init from "./init.ts";
