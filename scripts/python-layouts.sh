#!/usr/bin/env bash
# Prints, from an installed CPython's own headers, every offset and constant
# that collectors/python/py_layout.cpp holds for that version, in the form of
# test/unit/python/layouts/<major.minor>.txt (the unit tests compare the
# table with those files). Usage:
#
#   scripts/python-layouts.sh PYTHON [OUT_FILE]
#
# PYTHON is the interpreter whose headers are used (python3-config-style
# include dir from sysconfig, internal headers included). Needs a C compiler.
set -euo pipefail
python=${1:?usage: python-layouts.sh PYTHON [OUT_FILE]}
out=${2:-/dev/stdout}
inc=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -I"$inc" -I"$inc/internal" "$here/python_layout_facts.c" -o "$tmp/facts"
"$tmp/facts" > "$out"
