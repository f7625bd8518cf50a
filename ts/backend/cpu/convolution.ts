// Convolution on the CPU (the reference every GPU path is tested against): a direct loop over
// output positions and kernel taps, accumulating in float64 and rounding once to the output dtype.
// The weight is first rearranged to [group][tap][c_in][c_out] so the innermost loop runs over
// contiguous output channels.
import type { MgArray } from "../../core/array.ts";
import { Convolution, convGeometry, type ConvolutionParams } from "../../core/primitives/convolution.ts";
import { registerCpu } from "./registry.ts";
import { readNumbers, writeNumbers } from "./values.ts";

function convolutionCpu(inputs: readonly MgArray[], outputs: readonly MgArray[], p: ConvolutionParams): void {
  const [x, w] = inputs as [MgArray, MgArray];
  const out = outputs[0]!;
  const g = convGeometry(x, w, out, p);
  const result = new Float64Array(out.size);
  if (out.size === 0) {
    writeNumbers(out, result);
    return;
  }
  const xv = readNumbers(x);
  const wv = readNumbers(w);
  const { nd, batch, inShape, outShape, kShape, cin, cout, cinGroup: cig, coutGroup: cog } = g;
  const taps = kShape.reduce((a, b) => a * b, 1);
  const outPositions = outShape.reduce((a, b) => a * b, 1);
  const inPositions = inShape.reduce((a, b) => a * b, 1);

  // wt[((grp·taps + tap)·cig + ci)·cog + c] = w[grp·cog + c, tap, ci]
  const wt = new Float64Array(wv.length);
  for (let grp = 0; grp < p.groups; grp++) {
    for (let c = 0; c < cog; c++) {
      const co = grp * cog + c;
      for (let tap = 0; tap < taps; tap++) {
        for (let ci = 0; ci < cig; ci++) {
          wt[((grp * taps + tap) * cig + ci) * cog + c] = wv[(co * taps + tap) * cig + ci]!;
        }
      }
    }
  }

  // Row-major strides of the spatial axes (in positions) and of the kernel taps.
  const inStride = new Array<number>(nd);
  const outStride = new Array<number>(nd);
  const kStride = new Array<number>(nd);
  for (let a = nd - 1, si = 1, so = 1, sk = 1; a >= 0; a--) {
    inStride[a] = si;
    outStride[a] = so;
    kStride[a] = sk;
    si *= inShape[a]!;
    so *= outShape[a]!;
    sk *= kShape[a]!;
  }

  // For one output position: the input position each tap reads (−1 where it reads padding or a
  // dilation hole), with the tap's index into the (possibly flipped) kernel.
  const tapInput = new Int32Array(taps);
  const tapKernel = new Int32Array(taps);
  const acc = new Float64Array(cog);
  const opos = new Array<number>(nd).fill(0);

  for (let o = 0; o < outPositions; o++) {
    for (let a = 0, rem = o; a < nd; a++) {
      opos[a] = Math.floor(rem / outStride[a]!);
      rem -= opos[a]! * outStride[a]!;
    }
    for (let tap = 0; tap < taps; tap++) {
      let inPos = 0;
      let kIndex = 0;
      let valid = true;
      for (let a = 0, rem = tap; a < nd; a++) {
        const k = Math.floor(rem / kStride[a]!);
        rem -= k * kStride[a]!;
        const j = opos[a]! * p.stride[a]! + k * p.kernelDilation[a]! - p.paddingLo[a]!;
        const d = p.inputDilation[a]!;
        if (j < 0 || j % d !== 0 || j / d >= inShape[a]!) {
          valid = false;
          break;
        }
        inPos += (j / d) * inStride[a]!;
        kIndex += (p.flip ? kShape[a]! - 1 - k : k) * kStride[a]!;
      }
      tapInput[tap] = valid ? inPos : -1;
      tapKernel[tap] = kIndex;
    }
    for (let n = 0; n < batch; n++) {
      const outBase = (n * outPositions + o) * cout;
      for (let grp = 0; grp < p.groups; grp++) {
        acc.fill(0);
        for (let tap = 0; tap < taps; tap++) {
          const ip = tapInput[tap]!;
          if (ip < 0) continue;
          const xBase = (n * inPositions + ip) * cin + grp * cig;
          const wBase = (grp * taps + tapKernel[tap]!) * cig * cog;
          for (let ci = 0; ci < cig; ci++) {
            const xval = xv[xBase + ci]!;
            const wRow = wBase + ci * cog;
            for (let c = 0; c < cog; c++) acc[c]! += xval * wt[wRow + c]!;
          }
        }
        result.set(acc, outBase + grp * cog);
      }
    }
  }
  writeNumbers(out, result);
}

registerCpu(Convolution, convolutionCpu);
