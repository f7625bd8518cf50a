// metalgrad's native runtime for this platform: the loader (ts/backend/runtime.ts) imports this
// path. metalgrad.metallib beside it holds the kernels precompiled (used while not stale).
module.exports = require("node:path").join(__dirname, "libMetalGradRuntime.dylib");
