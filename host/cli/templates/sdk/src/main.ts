// {{name}}: a zot extension on the @zot/ext SDK, built to a sandboxed WebAssembly
// component (npm run build:wasm) or to a Node script (npm run build): the same source.
//
// - the slash command /{{name}}, which shows the text typed after it;
// - the tool {{name}}_echo, which the model can call with {"text": "..."};
// - an interceptor of tool_call that blocks a bash command deleting the whole disk
//   (rm -rf /) and allows everything else.
//
// {{engine_line}}
import { allow, block, display, extension } from "@zot/ext";

const echoSchema = {
  type: "object",
  properties: { text: { type: "string", description: "The text to echo back." } },
  required: ["text"],
};

/** True for an `rm` with a flag holding both r and f whose target is / or /*. */
function dangerous(command{{string_type}}) {
  const words = command.split(/\s+/);
  return words.includes("rm")
    && words.some((w) => w === "/" || w === "/*")
    && words.some((w) => w.startsWith("-") && w.toLowerCase().includes("r") && w.includes("f"));
}

extension({ name: "{{name}}", version: "0.1.0" })
  .command("{{name}}", "Show the text typed after /{{name}}", (args) =>
    display(args ? `{{name}} got: ${args}` : "{{name}}: no arguments"),
  )
  .tool("{{name}}_echo", "Echo a text back.", echoSchema, (args{{args_type}}) => {
    if (typeof args.text !== "string") {
      return { content: 'missing the string argument "text"', isError: true };
    }
    return `echo: ${args.text}`;
  })
  .intercept("tool_call", (ev) => {
    const command = (ev.tool_args{{tool_args_type}})?.command;
    if (ev.tool_name === "bash" && typeof command === "string" && dangerous(command)) {
      return block("{{name}}: refused to delete the whole disk (rm -rf /)");
    }
    return allow();
  })
  .run();
