// mg.testing: tools for users' own tests (through the options helper, ts/core/options.ts).
import { publicFunction, publicFunctions } from "../core/options.ts";
import { gradcheck as gradcheckImpl } from "./gradcheck.ts";
import * as toleranceFns from "./tolerances.ts";

export const gradcheck = publicFunction("testing.gradcheck", gradcheckImpl, { library: false });
export const { accumulationTolerance, toleranceFor } = publicFunctions("testing.", toleranceFns, { library: false });
export { TOLERANCES } from "./tolerances.ts";
export type { GradcheckMismatch, GradcheckOptions, GradcheckReport } from "./gradcheck.ts";
export type { Tolerance } from "./tolerances.ts";
