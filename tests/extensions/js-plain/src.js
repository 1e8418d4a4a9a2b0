// js-plain: the source `npm run build` copies to dist/main.js (tests of builds at install).
const rl = require("readline").createInterface({ input: process.stdin });
const send = (f) => process.stdout.write(JSON.stringify(f) + "\n");
send({ type: "hello", name: "js-plain", version: "1.0.0", capabilities: ["tools"] });
send({ type: "register_tool", name: "js_echo", description: "echo", schema: { type: "object" } });
send({ type: "ready" });
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.type === "tool_call") send({ type: "tool_result", id: m.id, content: [{ type: "text", text: JSON.stringify(m.args) }] });
  if (m.type === "shutdown") { send({ type: "shutdown_ack" }); process.exit(0); }
});
