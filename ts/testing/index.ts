// mg.testing: tools for users' own tests.
export { gradcheck } from "./gradcheck.ts";
export type { GradcheckMismatch, GradcheckOptions, GradcheckReport } from "./gradcheck.ts";
