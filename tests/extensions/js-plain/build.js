// The build of js-plain: dist/main.js from src.js, with Node alone.
const fs = require("fs");
fs.mkdirSync("dist", { recursive: true });
fs.copyFileSync("src.js", "dist/main.js");
console.log("built dist/main.js");
