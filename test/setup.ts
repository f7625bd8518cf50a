// Preloaded before every test file (bunfig.toml). A cold run compiles each kernel variant once on
// the Metal simulator (tens to hundreds of milliseconds each), so tests get more than bun's 5 s.
import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(180_000);
