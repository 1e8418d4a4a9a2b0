// The component's entry (npm run build:wasm): the WIT export `guest` from the SDK's
// component transport first, then the extension, whose run() then speaks through the
// host (zot:extension/host) instead of stdin and stdout.
export { guest } from "@zot/ext/component";
import "./main.js";
