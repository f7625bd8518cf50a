// mg.fft: MLX 0.32.4's 18 functions (ts/core/ops/fft.ts), each a library call
// (ts/core/ownership.ts): padded, sliced and framed intermediates are freed after their last use.
import { publicNamespace } from "../core/options.ts";
import * as ops from "../core/ops/fft.ts";

export const {
  fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2, irfft2, rfftn, irfftn, fftfreq, rfftfreq,
  fftshift, ifftshift, stft, istft,
} = publicNamespace("fft.", ops);
