#!/usr/bin/env bash
# Developer check of Python call sites on every supported CPython, not only
# the Debian python3 that CI runs. For each interpreter it
#   1. prints the layout facts from that interpreter's headers and compares
#      them with test/unit/collectors/python/layouts/<version>.txt (what the unit tests
#      hold the table to),
#   2. dumps its line tables and compares them with
#      test/unit/collectors/python/linetables/<version>.txt,
#   3. runs the agent_python integration test with that interpreter
#      (PROF_TEST_PYTHON) against the build tree.
#
# Usage:
#   scripts/python-versions.sh [-B BUILD_DIR] PYTHON...
#   scripts/python-versions.sh [-B BUILD_DIR] --source CPYTHON_GIT_DIR TAG...
#
# --source builds each tag (e.g. v3.10.13 v3.12.1 v3.13.0) of a CPython git
# checkout from source first (./configure --enable-shared && make && make
# install into $PREFIX_ROOT/<tag>, default ~/.cache/libprof-cpython), then
# checks the installed interpreter. Exit status: 0 when every interpreter
# passed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build="$root/build"
if [ "${1:-}" = "-B" ]; then build=$2; shift 2; fi
pythons=()
if [ "${1:-}" = "--source" ]; then
  src=${2:?--source needs a CPython git checkout}
  shift 2
  prefix_root=${PREFIX_ROOT:-$HOME/.cache/libprof-cpython}
  for tag in "$@"; do
    prefix="$prefix_root/$tag"
    if [ ! -x "$prefix/bin/python3" ]; then
      work=$(mktemp -d)
      git -C "$src" archive "$tag" | tar -x -C "$work" || { echo "$tag: cannot export"; exit 1; }
      (cd "$work" && ./configure -q --prefix="$prefix" --enable-shared LDFLAGS="-Wl,-rpath,$prefix/lib" &&
        make -s -j"$(nproc)" && make -s install) > "$work.log" 2>&1 || { echo "$tag: build failed, see $work.log"; exit 1; }
      rm -rf "$work"
    fi
    pythons+=("$prefix/bin/python3")
  done
else
  pythons=("$@")
fi
[ ${#pythons[@]} -gt 0 ] || { sed -n '2,22p' "$0"; exit 2; }

failed=0
for py in "${pythons[@]}"; do
  version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  # A free-threaded build's facts are layouts/3.Nt.txt; its line tables are the version's.
  ft=$("$py" -c 'import sysconfig; print("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else "")')
  full=$("$py" -c 'import sys; print(sys.version.split()[0])')
  echo "== CPython $full ($py)"
  status=ok
  if "$here/python-layouts.sh" "$py" /tmp/libprof-layout.$$ 2>/dev/null &&
     diff -q /tmp/libprof-layout.$$ "$root/test/unit/collectors/python/layouts/$version$ft.txt" >/dev/null; then
    echo "   layout facts: same as layouts/$version$ft.txt"
  else
    echo "   layout facts: DIFFER from layouts/$version$ft.txt (or headers missing)"; status=failed
  fi
  if "$py" "$here/python-linetables.py" | diff -q - "$root/test/unit/collectors/python/linetables/$version.txt" >/dev/null; then
    echo "   line tables: same as linetables/$version.txt"
  else
    echo "   line tables: DIFFER from linetables/$version.txt"; status=failed
  fi
  if out=$(cd "$build" && PROF_TEST_PYTHON="$py" ctest -R '^agent_python$' --output-on-failure 2>&1); then
    echo "   agent_python: passed"
  else
    echo "   agent_python: FAILED"; echo "$out" | grep -E "FAIL|Error|assert" | head -10; status=failed
  fi
  rm -f /tmp/libprof-layout.$$
  [ "$status" = ok ] || failed=1
done
exit $failed
