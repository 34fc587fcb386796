#!/usr/bin/env bash
# Creates the tests' Python environment, $PY_VENV (default .deps/venv, ignored
# by git), from the system's python3 (`python3 -m venv`; nothing is installed
# into the system Python), and installs into it, from PyPI, exactly what the
# hash-pinned files in test/ name:
#
#   test/requirements*.txt         one `pip install --require-hashes` over all of
#                                  them together: every package, dependencies
#                                  included, pinned with its hashes (a file added
#                                  beside them, such as requirements-torch.txt,
#                                  is installed with the others)
#   test/requirements*-nodeps.txt  then `--no-deps`: packages whose declared
#                                  dependencies are not needed (HTA's notebook
#                                  stack); what they import is pinned in the
#                                  files above
#
# How the files are made: test/requirements.in and scripts/pin-python-deps.sh.
# The wheels are downloaded (pip download) into a wheelhouse outside the clone,
# $LIBPROF_WHEELS (default ~/.cache/libprof/wheels), and installed from there
# only (--no-index), so another clone on the same machine downloads nothing
# again. (pip's own HTTP cache is not enough: the registry these machines reach
# sends no caching headers, and pip then stores nothing.) When the files have
# not changed since the last install (the stamp $PY_VENV/.installed-requirements),
# nothing runs.
#
# Exit status: 0 ready; 2 when PyPI cannot be reached (the file
# $PY_VENV/unreachable then says why, and the tests that need these packages
# skip with that reason, or fail under CI=true); 1 on any other failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${PY_VENV:-$root/.deps/venv}
python=${PYTHON3:-python3}
stamp=$venv/.installed-requirements
wheels=${LIBPROF_WHEELS:-${XDG_CACHE_HOME:-$HOME/.cache}/libprof/wheels}
made_from=$("$python" -c 'import sys; print(sys.version.split()[0], sys.base_prefix)') || {
  echo "python-venv: no $python to make the venv from" >&2; exit 1; }

mapfile -t all < <(ls "$root"/test/requirements*.txt 2>/dev/null | sort)
resolved=() nodeps=()
for f in "${all[@]}"; do
  case $f in *-nodeps.txt) nodeps+=("$f") ;; *) resolved+=("$f") ;; esac
done

# What the stamp records: every file's content.
want() {
  for f in "${all[@]}"; do echo "== ${f#"$root"/}"; cat "$f"; done
}
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.made-from" 2>/dev/null)" = "$made_from" ] &&
   cmp -s "$stamp" <(want); then
  exit 0
fi

# A venv made from another interpreter (python3 moved or upgraded) is made again.
if [ -e "$venv" ] && [ "$(cat "$venv/.made-from" 2>/dev/null)" != "$made_from" ]; then
  rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
  if ! "$python" -m venv "$venv"; then
    echo "python-venv: '$python -m venv $venv' failed (Debian: apt-get install python3-venv)" >&2
    exit 1
  fi
  echo "$made_from" > "$venv/.made-from"
fi
rm -f "$stamp" "$venv/unreachable"

log=$venv/install.log
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input --timeout 30 --retries 2)
args=() nodeps_args=()
for f in "${resolved[@]}"; do args+=(-r "$f"); done
for f in "${nodeps[@]}"; do nodeps_args+=(-r "$f"); done
# pip reads the wheelhouse only (no index): every file is checked against its hash.
from_wheels() {
  { [ ${#args[@]} -eq 0 ] ||
      "${pip[@]}" install --require-hashes --no-index --find-links "$wheels" "${args[@]}"; } &&
  { [ ${#nodeps_args[@]} -eq 0 ] ||
      "${pip[@]}" install --require-hashes --no-index --find-links "$wheels" --no-deps "${nodeps_args[@]}"; }
}
# pip download keeps a file already in the wheelhouse and fetches the others.
fetch() {
  { [ ${#args[@]} -eq 0 ] || "${pip[@]}" download --require-hashes -d "$wheels" "${args[@]}"; } &&
  { [ ${#nodeps_args[@]} -eq 0 ] || "${pip[@]}" download --require-hashes --no-deps -d "$wheels" "${nodeps_args[@]}"; }
}
mkdir -p "$wheels"
echo "python-venv: installing ${resolved[*]#"$root"/}${nodeps[*]:+, then without dependencies ${nodeps[*]#"$root"/},} into ${venv#"$root"/} (wheels kept in $wheels)"
from_wheels >"$log" 2>&1 || { echo "== fetching into $wheels" && fetch && from_wheels; } >>"$log" 2>&1
status=$?
if [ $status -ne 0 ]; then
  # pip retries a refused or timed-out connection with a WARNING naming the error, then gives up.
  net='NewConnectionError|ConnectTimeout|ReadTimeout|ProxyError|Max retries exceeded|Temporary failure in name resolution|Network is unreachable|Connection refused'
  if grep -qE "$net" "$log"; then
    cause=$(grep -m1 -oE "Failed to establish a new connection: [^')]*|Temporary failure in name resolution|Name or service not known|timed out|ProxyError\('[^']*" "$log")
    why="PyPI (${PIP_INDEX_URL:-https://pypi.org/simple}) is unreachable: ${cause:-$(grep -m1 -oE "$net" "$log")}"
    echo "python-venv: $why (log: $log)"
    echo "$why" > "$venv/unreachable"  # the tests skip with this reason
    exit 2
  fi
  echo "python-venv: pip install failed (log: $log):" >&2
  tail -5 "$log" >&2
  exit 1
fi
want > "$stamp"
echo "python-venv: ready (${venv#"$root"/}, $("$venv/bin/python" -m pip list --format=freeze 2>/dev/null | wc -l) packages)"
