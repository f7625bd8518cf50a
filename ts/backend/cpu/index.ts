// The CPU device: every primitive's TypeScript implementation, run synchronously. Each module
// below registers its kernels against the records (registerCpu); this one installs the backend.
import "./elementwise.ts";
import "./indexing.ts";
import "./matmul.ts";
import "./movement.ts";
import "./random.ts";
import "./reduce.ts";
import "./scan.ts";
import "./softmax.ts";
import "./sort.ts";
import { registerBackend } from "../../core/graph.ts";
import { cpuBackend } from "./backend.ts";
import { cpuKernels } from "./registry.ts";

registerBackend("cpu", cpuBackend(cpuKernels));
