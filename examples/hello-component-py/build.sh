#!/usr/bin/env bash
# Builds the component from app.py with componentize-py, against the WIT world of
# wit/zot-extension-0.1.0: hello_component.wasm beside this script, or the path given as
# the first argument.
#
#   python3 -m pip install -r requirements.txt    # componentize-py, pinned
#   ./build.sh [OUTPUT.wasm]
#
# $PYTHON (default python3) is the interpreter componentize-py was installed into; if it
# does not have it, a `componentize-py` on PATH is used.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wit="$here/../../wit/zot-extension-0.1.0"
out="${1:-$here/hello_component.wasm}"
python="${PYTHON:-python3}"
pinned="$(sed -n 's/^componentize-py==//p' "$here/requirements.txt")"

if "$python" -c 'import componentize_py' >/dev/null 2>&1; then
  cpy=("$python" -c 'import sys; from componentize_py import script
sys.argv[0] = "componentize-py"; sys.exit(script())')
elif command -v componentize-py >/dev/null 2>&1; then
  cpy=(componentize-py)
else
  echo "componentize-py is not installed; install it with:" >&2
  echo "  $python -m pip install componentize-py==$pinned" >&2
  exit 127
fi
have="$("${cpy[@]}" --version | awk '{print $NF}')"
if [ "$have" != "$pinned" ]; then
  echo "warning: componentize-py $have found; this example is pinned to $pinned" >&2
fi

mkdir -p "$(dirname "$out")"
# Built from a copy: componentize-py leaves a __pycache__ beside the module it imports.
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
cp "$here/app.py" "$src/"
# -d, -w: the WIT folder and the world; -p: where app.py is; app: its module; -o: output.
"${cpy[@]}" -d "$wit" -w extension componentize -p "$src" app -o "$out"
