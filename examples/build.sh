#!/usr/bin/env sh
# Builds every Rust example twice from the same source, and puts each artifact beside
# the manifest that names it:
#   <example>/native/<example>      a classic stdio extension  (cargo build --release)
#   <example>/wasm/<example>.wasm   a sandboxed component      (--target wasm32-wasip2)
# Honours CARGO_TARGET_DIR (a relative one is taken from where you run this).
# Then, e.g.:  zot ext check examples/todo/wasm   or   zot ext install examples/todo/native
set -eu
case "${CARGO_TARGET_DIR:-}" in
  "" | /*) ;;
  *) CARGO_TARGET_DIR="$PWD/$CARGO_TARGET_DIR" ;;
esac
cd "$(dirname "$0")"
target="${CARGO_TARGET_DIR:-$PWD/target}"
export CARGO_TARGET_DIR="$target"
examples="hello weather guard todo"
rustup target add wasm32-wasip2 >/dev/null 2>&1 || true
cargo build --release
cargo build --release --target wasm32-wasip2
for e in $examples; do
  cp "$target/release/$e" "$e/native/$e"
  cp "$target/wasm32-wasip2/release/$e.wasm" "$e/wasm/$e.wasm"
  echo "built $e/native/$e and $e/wasm/$e.wasm"
done
