#!/usr/bin/env sh
# Builds every Rust example twice from the same source, and puts each artifact beside
# the manifest that names it:
#   <example>/native/<example>      a classic stdio extension  (cargo build --release)
#   <example>/wasm/<example>.wasm   a sandboxed component      (--target wasm32-wasip2)
# Then, e.g.:  zot ext check examples/todo/wasm   or   zot ext install examples/todo/native
set -eu
cd "$(dirname "$0")"
examples="hello weather guard todo"
rustup target add wasm32-wasip2 >/dev/null 2>&1 || true
cargo build --release
cargo build --release --target wasm32-wasip2
for e in $examples; do
  cp "target/release/$e" "$e/native/$e"
  cp "target/wasm32-wasip2/release/$e.wasm" "$e/wasm/$e.wasm"
  echo "built $e/native/$e and $e/wasm/$e.wasm"
done
