// metalgrad's native runtime for this platform: the loader (ts/backend/runtime.ts) imports this
// path. The library links the Swift runtime statically: no Swift toolchain is needed to load it.
module.exports = require("node:path").join(__dirname, "libMetalGradRuntime.so");
