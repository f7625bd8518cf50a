// Every derivative and batching rule of the core's primitives. Imported (for its effect: attaching
// the rules to the records) by the transforms' entry points (ts/autograd/vjp.ts, jvp.ts, vmap.ts)
// and by ts/index.ts, so the rules are present whenever a transform runs.
import "./convolution.ts";
import "./custom.ts";
import "./elementwise.ts";
import "./fft.ts";
import "./indexing.ts";
import "./join.ts";
import "./linalg.ts";
import "./matmul.ts";
import "./movement.ts";
import "./quantized.ts";
import "./random.ts";
import "./reduce.ts";
import "./scan.ts";
import "./softmax.ts";
import "./sort.ts";
import "./views.ts";
