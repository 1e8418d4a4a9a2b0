// The sandboxed build's entry (npm run build:wasm): the WIT export `guest` of the SDK's
// component transport first, then the extension itself, whose run() then speaks through
// the host instead of stdin and stdout.
export { guest } from "@zot/ext/component";
import "./main.js";
