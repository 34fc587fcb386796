#!/usr/bin/env bash
# Pins the tests' Python packages with their hashes: each test/requirements*.in
# becomes the .txt beside it, which scripts/python-venv.sh installs with
# `pip install --require-hashes`. Run it after editing a .in file (or to move
# to newer releases) and commit the .in and .txt files together.
#
#   requirements.in          -> requirements.txt: pip-compile --generate-hashes,
#                               every dependency resolved and pinned
#   requirements-<x>.in      -> requirements-<x>.txt: the same, constrained by
#                               requirements.txt, so that a package both need
#                               gets the same pin (they are installed together)
#   requirements-nodeps.in   -> requirements-nodeps.txt: each line's release as
#                               `pip download --no-deps` fetches it (the wheel),
#                               pinned with that file's sha256 (`pip hash`)
#
# The tools (pip-tools) go into a throwaway venv under /tmp; nothing touches
# .deps/venv or the system Python. Needs PyPI.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/test"
work=$(mktemp -d /tmp/libprof-pin-XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check pip-tools
compile=("$work/venv/bin/pip-compile" -q --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links
         --resolver=backtracking)

"${compile[@]}" -o requirements.txt requirements.in
for in_file in requirements-*.in; do
  [ -e "$in_file" ] || continue
  case $in_file in *-nodeps.in) continue ;; esac
  "${compile[@]}" -c requirements.txt -o "${in_file%.in}.txt" "$in_file"
done

if [ -e requirements-nodeps.in ]; then
  out=requirements-nodeps.txt
  {
    echo "# Made by scripts/pin-python-deps.sh from requirements-nodeps.in: installed with --no-deps."
    grep -vE '^\s*(#|$)' requirements-nodeps.in | while read -r req; do
      rm -rf "$work/dl" && mkdir "$work/dl"
      "$work/venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps -d "$work/dl" "$req"
      echo "$req \\"
      for file in "$work"/dl/*; do
        echo "    --hash=$("$work/venv/bin/python" -m pip hash "$file" | sed -n 's/^--hash=//p') \\"
      done | sed '$ s/ \\$//'
    done
  } > "$out"
fi
echo "pin-python-deps: $(ls requirements*.txt | tr '\n' ' ')written in test/"
