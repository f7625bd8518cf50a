// The GPU rules of the mg.fast primitives: bind a node's arrays as kernel views and hand them to
// the encoders of this directory; the trace gets each dispatch with the primitive's inputs and
// outputs, and a note where the precision policy asked for something no kernel here provides.
import type { MgArray, Node } from "../../../core/array.ts";
import { type Dtype, float32 } from "../../../core/dtype.ts";
import { tracing } from "../../../core/trace.ts";
import {
  CrossEntropy, CrossEntropyVJP, LayerNorm, type LayerNormParams, LayerNormVJP, RMSNorm, type RMSNormParams, RMSNormVJP, RoPE, ScaledDotProductAttention,
  ScaledDotProductAttentionVJP, type SdpaParams,
} from "../../../fast/primitives.ts";
import type { GpuEncoder } from "../encoder.ts";
import type { KernelInstance } from "../kernels.ts";
import { type KernelRule, registerGpu } from "../registry.ts";
import type { DispatchFacts, KernelOutput, KernelSink, KernelView } from "./common.ts";
import { crossEntropyKernels, encodeCrossEntropy, encodeCrossEntropyVjp } from "./cross-entropy.ts";
import { encodeNorm, encodeNormVjp, normForwardKernel, type NormOptions, normVjpKernels } from "./norm.ts";
import { encodeRope, ropeKernel } from "./rope.ts";
import { encodeSdpa, encodeSdpaVjp, gpuSdpaPlan, type SdpaProblem } from "./sdpa.ts";

function view(enc: GpuEncoder, a: MgArray): KernelView {
  const b = enc.input(a, 0);
  return { buffer: b.binding.buffer, offset: b.binding.offset ?? 0, length: b.binding.length ?? 0, base: b.base, shape: a.shape, strides: b.strides, dtype: a.dtype };
}

function output(enc: GpuEncoder, a: MgArray): KernelOutput {
  const b = enc.outputBinding(a, 0);
  return { buffer: b.buffer, offset: b.offset ?? 0, length: b.length ?? 0, shape: a.shape, dtype: a.dtype };
}

function sinkFor(enc: GpuEncoder, node: Node<unknown>, extraNotes: readonly string[] = []): KernelSink {
  return {
    dispatch(d, facts: DispatchFacts) {
      enc.dispatch(
        d,
        tracing()
          ? { primitives: [node.primitive.name], inputs: node.inputs, outputs: node.outputs, layout: facts.layout, precision: facts.precision, notes: [...(facts.notes ?? []), ...extraNotes] }
          : null,
      );
    },
    temporary: (bytes) => enc.temporary(bytes),
  };
}

// Norms ------------------------------------------------------------------------------------------

const normOptions = (p: RMSNormParams | LayerNormParams, layer: boolean): NormOptions => ({ layer, eps: p.eps, accumulate16: p.accumulate16 });

registerGpu(RMSNorm, {
  kind: "kernel",
  kernels: (node) => [normForwardKernel(node.inputs[0]!.dtype, node.inputs[0]!.shape.at(-1) ?? 1, normOptions(node.params, false))],
  encode(enc, node) {
    const p = node.params;
    const [x, w] = node.inputs;
    encodeNorm(sinkFor(enc, node), view(enc, x!), p.hasWeight ? view(enc, w!) : null, null, output(enc, node.outputs[0]!), normOptions(p, false));
  },
});

registerGpu(LayerNorm, {
  kind: "kernel",
  kernels: (node) => [normForwardKernel(node.inputs[0]!.dtype, node.inputs[0]!.shape.at(-1) ?? 1, normOptions(node.params, true))],
  encode(enc, node) {
    const p = node.params;
    let k = 1;
    const w = p.hasWeight ? view(enc, node.inputs[k++]!) : null;
    const b = p.hasBias ? view(enc, node.inputs[k++]!) : null;
    encodeNorm(sinkFor(enc, node), view(enc, node.inputs[0]!), w, b, output(enc, node.outputs[0]!), normOptions(p, true));
  },
});

/** Inputs [x, w?, b?, g]; outputs [dx, dw?, db?]. */
function normVjpRule(layer: boolean): KernelRule<RMSNormParams | LayerNormParams> {
  return {
    kind: "kernel",
    kernels(node) {
      const k = normVjpKernels(node.inputs[0]!.dtype, node.inputs[0]!.shape.at(-1) ?? 1, normOptions(node.params, layer));
      return node.outputs.length > 1 ? [k.dx, k.params] : [k.dx];
    },
    encode(enc, node) {
      const p = node.params;
      const hasBias = layer && (p as LayerNormParams).hasBias;
      const g = node.inputs[node.inputs.length - 1]!;
      let k = 1;
      const dx = output(enc, node.outputs[k - 1]!);
      const dw = p.hasWeight ? output(enc, node.outputs[k++]!) : null;
      const db = hasBias ? output(enc, node.outputs[k++]!) : null;
      const x = node.inputs[0]!;
      if (x.size === 0 && (dw || db)) {
        throw new Error(`[${layer ? "layer_norm" : "rms_norm"}] internal: the op computes the gradients of an empty input without kernels.`);
      }
      encodeNormVjp(sinkFor(enc, node), view(enc, x), p.hasWeight ? view(enc, node.inputs[1]!) : null, view(enc, g), dx, dw, db, normOptions(p, layer));
    },
  };
}
registerGpu(RMSNormVJP, normVjpRule(false));
registerGpu(LayerNormVJP, normVjpRule(true));

// RoPE -------------------------------------------------------------------------------------------

registerGpu(RoPE, {
  kind: "kernel",
  kernels: (node) => [ropeKernel(node.inputs[0]!.dtype)],
  encode(enc, node) {
    const p = node.params;
    encodeRope(sinkFor(enc, node), view(enc, node.inputs[0]!), view(enc, node.inputs[1]!), p.hasFreqs ? view(enc, node.inputs[2]!) : null, output(enc, node.outputs[0]!), {
      dims: p.dims,
      traditional: p.traditional,
      base: p.base,
      scale: p.scale,
      forward: p.forward,
    });
  },
});

// Attention --------------------------------------------------------------------------------------

function sdpaProblem(q: MgArray, k: MgArray, v: MgArray, p: SdpaParams): SdpaProblem {
  return { B: q.shape[0]!, Hq: q.shape[1]!, Hkv: k.shape[1]!, qL: q.shape[2]!, kL: k.shape[2]!, Dk: q.shape[3]!, Dv: v.shape[3]!, dtype: q.dtype, mask: p.mask, sinks: p.hasSinks };
}

/** The trace note of a policy no kernel here can honour. */
function policyNotes(p: SdpaParams, dtype: Dtype): string[] {
  if (p.matmul === "high" && dtype === float32) {
    return ["precision policy matmul=\"high\" allows TF32-class/NAX attention; metalgrad has no such kernel, so the products are IEEE fp32"];
  }
  return [];
}

function sdpaViews(enc: GpuEncoder, node: Node<SdpaParams>, p: SdpaParams) {
  const [q, k, v] = node.inputs as [MgArray, MgArray, MgArray];
  let at = 3;
  const mask = p.mask === "bool" || p.mask === "additive" ? view(enc, node.inputs[at++]!) : null;
  const sinks = p.hasSinks ? view(enc, node.inputs[at++]!) : null;
  return { views: { q: view(enc, q), k: view(enc, k), v: view(enc, v), mask, sinks }, next: at };
}

registerGpu(ScaledDotProductAttention, {
  kind: "kernel",
  kernels(node) {
    const p = node.params;
    const [q, k, v] = node.inputs as [MgArray, MgArray, MgArray];
    return gpuSdpaPlan(sdpaProblem(q, k, v, p), p).steps.map((s): KernelInstance => s.kernel);
  },
  encode(enc, node) {
    const p = node.params;
    const [q, k, v] = node.inputs as [MgArray, MgArray, MgArray];
    const problem = sdpaProblem(q, k, v, p);
    const plan = gpuSdpaPlan(problem, p);
    const { views } = sdpaViews(enc, node, p);
    // Without a statistics output (no transform will differentiate it) the kernel writes them to scratch.
    const stats: KernelOutput = node.outputs[1]
      ? output(enc, node.outputs[1])
      : { buffer: enc.temporary(plan.statsBytes), offset: 0, length: plan.statsBytes, shape: [problem.B, problem.Hq, problem.qL, 2], dtype: float32 };
    encodeSdpa(sinkFor(enc, node, policyNotes(p, q.dtype)), problem, plan, p.scale, views, output(enc, node.outputs[0]!), stats);
  },
});

/** Inputs [q, k, v, mask?, sinks?, o, stats, dO]; outputs [dq, dk, dv]. */
registerGpu(ScaledDotProductAttentionVJP, {
  kind: "kernel",
  kernels(node) {
    const p = node.params;
    const [q, k, v] = node.inputs as [MgArray, MgArray, MgArray];
    return gpuSdpaPlan(sdpaProblem(q, k, v, p), p).backward.steps.map((s) => s.kernel);
  },
  encode(enc, node) {
    const p = node.params;
    const [q, k, v] = node.inputs as [MgArray, MgArray, MgArray];
    const problem = sdpaProblem(q, k, v, p);
    const plan = gpuSdpaPlan(problem, p);
    const { views, next } = sdpaViews(enc, node, p);
    const [o, stats, dO] = node.inputs.slice(next) as [MgArray, MgArray, MgArray];
    const [dq, dk, dv] = node.outputs as [MgArray, MgArray, MgArray];
    encodeSdpaVjp(
      sinkFor(enc, node, policyNotes(p, q.dtype)),
      problem,
      plan,
      p.scale,
      { ...views, o: view(enc, o), stats: view(enc, stats), dO: view(enc, dO) },
      output(enc, dq),
      output(enc, dk),
      output(enc, dv),
    );
  },
});

// Cross entropy ----------------------------------------------------------------------------------

registerGpu(CrossEntropy, {
  kind: "kernel",
  kernels: (node) => [crossEntropyKernels(node.inputs[0]!.dtype, node.params.accumulate16).forward],
  encode(enc, node) {
    encodeCrossEntropy(sinkFor(enc, node), view(enc, node.inputs[0]!), view(enc, node.inputs[1]!), output(enc, node.outputs[0]!), node.params.accumulate16);
  },
});

registerGpu(CrossEntropyVJP, {
  kind: "kernel",
  kernels: (node) => [crossEntropyKernels(node.inputs[0]!.dtype, node.params.accumulate16).backward],
  encode(enc, node) {
    const [x, t, g] = node.inputs as [MgArray, MgArray, MgArray];
    encodeCrossEntropyVjp(sinkFor(enc, node), view(enc, x), view(enc, t), view(enc, g), output(enc, node.outputs[0]!), node.params.accumulate16);
  },
});
