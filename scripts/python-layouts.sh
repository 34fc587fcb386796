#!/usr/bin/env bash
# Prints, from an installed CPython's own headers, every offset and constant
# that collectors/python/py_layout.cpp holds for that version, in the form of
# test/unit/collectors/python/layouts/<major.minor>.txt (the unit tests compare the
# table with those files). Usage:
#
#   scripts/python-layouts.sh [--free-threaded] PYTHON [OUT_FILE]
#
# PYTHON is the interpreter whose headers are used (python3-config-style
# include dir from sysconfig, internal headers included). --free-threaded
# prints the layout of the same version's free-threaded build (3.14t, ...)
# from the same headers' Py_GIL_DISABLED arms, as a --disable-gil build of
# that source compiles them. Needs a C compiler.
set -euo pipefail
defines=()
if [ "${1:-}" = "--free-threaded" ]; then defines=(-DPy_GIL_DISABLED=1); shift; fi
python=${1:?usage: python-layouts.sh [--free-threaded] PYTHON [OUT_FILE]}
out=${2:-/dev/stdout}
inc=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# $inc/..: Debian's pyconfig.h includes <x86_64-linux-gnu/python3.N/pyconfig.h>.
cc "${defines[@]}" -I"$inc" -I"$inc/internal" -I"$inc/.." "$here/python_layout_facts.c" -o "$tmp/facts"
"$tmp/facts" > "$out"
