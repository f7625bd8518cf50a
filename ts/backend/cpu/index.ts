// The CPU device: every primitive's TypeScript implementation, run synchronously. Each module
// below registers its kernels against the records (registerCpu); this one installs the backend.
import "./convolution.ts";
import "./elementwise.ts";
import "./fast-kernels.ts";
import "./fft.ts";
import "./indexing.ts";
import "./linalg/kernels.ts";
import "./matmul.ts";
import "./movement.ts";
import "./quantized.ts";
import "./random.ts";
import "./reduce.ts";
import "./scan.ts";
import "./softmax.ts";
import "./sort.ts";
import { registerBackend } from "../../core/graph.ts";
import { cpuBackend } from "./backend.ts";
import { cpuKernels } from "./registry.ts";

registerBackend("cpu", cpuBackend(cpuKernels));
