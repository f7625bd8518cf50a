// mg.testing: tools for users' own tests.
export { gradcheck } from "./gradcheck.ts";
export type { GradcheckMismatch, GradcheckOptions, GradcheckReport } from "./gradcheck.ts";
export { accumulationTolerance, type Tolerance, toleranceFor, TOLERANCES } from "./tolerances.ts";
