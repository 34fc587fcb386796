#!/usr/bin/env bash
# Fetches CPython 3.14 and 3.15 as Debian's development distribution (sid)
# builds them, without installing anything into the system: apt-get download
# against a private sources list and state directory, dpkg -x into
# $PY_DEPS (default .deps/python, ignored by git), and a wrapper per version
# that runs the interpreter under sid's own dynamic loader and libraries:
#
#   $PY_DEPS/bin/python3.14 ...   (ld-linux-x86-64.so.2 --library-path ... python3.14)
#   $PY_DEPS/root/usr/include/python3.14/   the headers of that very build
#
# Usage: scripts/python-debian.sh [VERSION...]   (default: 3.14 3.15)
# Prints one line per version. Exit status 0 when every version is usable;
# 2 when the registry cannot be reached and nothing is cached (the file
# $PY_DEPS/unreachable then says why, and the tests that need these
# interpreters skip with that reason); 1 on any other failure. A second run with
# everything cached does no network access and takes well under a second.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps=${PY_DEPS:-$root/.deps/python}
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.14 3.15)
mkdir -p "$deps/bin"
# shellcheck source-path=SCRIPTDIR source=lib/debian-apt.sh
. "$root/scripts/lib/debian-apt.sh"

# The libraries the interpreter and its standard-library extensions link,
# taken from sid too so that sid's glibc loads sid's builds of them.
common=(libc6 libssl3t64 libexpat1 zlib1g libffi8 libzstd1 libbz2-1.0 liblzma5 libsqlite3-0 libuuid1
        libncursesw6 libtinfo6 libreadline8t64 libmpdec4 libgcc-s1 libstdc++6)
per_version() { echo "python$1-minimal libpython$1-minimal libpython$1-stdlib libpython$1-dev"; }

ready() { [ -x "$deps/bin/python$1" ] && [ -f "$deps/root/usr/include/python$1/Python.h" ] &&
          "$deps/bin/python$1" -c 'import ctypes, threading, asyncio' 2>/dev/null; }

need=()
for v in "${versions[@]}"; do ready "$v" || need+=("$v"); done
if [ ${#need[@]} -gt 0 ]; then
  if ! debian_apt_setup "$deps" main || ! apt-cache show python3.14 >/dev/null 2>&1; then
    why=${debian_apt_why:-"the Debian registry (sid) has no python3.14"}
    echo "python-debian: $why"
    echo "$why" > "$deps/unreachable"  # the tests skip with this reason
    exit 2
  fi
  pkgs=("${common[@]}")
  for v in "${need[@]}"; do
    read -r -a more <<<"$(per_version "$v")"
    pkgs+=("${more[@]}")
  done
  if ! debian_apt_download "$deps" "${pkgs[@]}"; then
    echo "python-debian: $debian_apt_why"
    echo "$debian_apt_why" > "$deps/unreachable"
    exit 2
  fi
  debian_unpack "$deps/debs" "$deps/root" || exit 1
fi

rm -f "$deps/unreachable"
libpath="$deps/root/usr/lib/x86_64-linux-gnu:$deps/root/lib/x86_64-linux-gnu"
status=0
for v in "${versions[@]}"; do
  # The loader runs the interpreter: sys.executable is the interpreter's own
  # path (argv[0]), from which CPython finds its standard library under
  # $deps/root/usr/lib/python$v. --library-path replaces LD_LIBRARY_PATH for
  # this process, so the caller's (e.g. the simulated CUDA stack) follows
  # sid's libraries.
  cat > "$deps/bin/python$v" <<EOF
#!/bin/sh
exec "$deps/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" \\
  --library-path "$libpath\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" \\
  --argv0 "$deps/root/usr/bin/python$v" "$deps/root/usr/bin/python$v" "\$@"
EOF
  chmod +x "$deps/bin/python$v"
  if ready "$v"; then
    echo "python-debian: $("$deps/bin/python$v" -c 'import sys; print(sys.version.split()[0])') at $deps/bin/python$v"
  else
    echo "python-debian: python$v does not run: $("$deps/bin/python$v" -c 'import ctypes' 2>&1 | tail -1)"
    status=1
  fi
done
exit $status
