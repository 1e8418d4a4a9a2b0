#!/usr/bin/env sh
# The README's first command. Builds zot and the Rust examples, then opens `zot ext shell`
# with two of them loaded: hello as a native stdio extension and guard as a sandboxed
# WebAssembly component. On a terminal the shell is yours (`help` lists the verbs, `quit`
# leaves); with stdin not a terminal it runs the tour in examples/demo.zot and exits.
# State goes to target/demo-home unless ZOT_HOME is set.
set -eu
cd "$(dirname "$0")/.."
export ZOT_HOME="${ZOT_HOME:-$PWD/target/demo-home}"
sh examples/build.sh >&2
set -- ext shell --ext examples/hello/native --ext examples/guard/wasm
if [ -t 0 ]; then
  exec cargo run -q -p zot-cli -- "$@"
fi
exec cargo run -q -p zot-cli -- "$@" --script examples/demo.zot
