#!/usr/bin/env bash
# Developer check of Python call sites on the free-threaded builds (3.14t,
# 3.15t). Debian ships no free-threaded interpreter, so this fetches the
# CPython sources from Debian's development distribution's source packages
# (apt-get source --download-only against a private sources list, as
# scripts/python-debian.sh does for the binaries), builds each with
# ./configure --disable-gil into $PY_DEPS/ft/<version>t (minutes per
# version; cached), then runs scripts/python-versions.sh on them: the layout
# facts from their own headers, their line tables against co_lines(), and
# the agent_python integration test.
#
# Usage: scripts/python-freethreaded.sh [-B BUILD_DIR] [--source VERSION=PATH]... [VERSION...]
#   (default versions 3.14 3.15). --source gives a version's CPython sources
#   (an unpacked tree or a release tarball) where the Debian mirror serves
#   no source packages.
# Nothing is installed into the system. Needs a C compiler, make and
# libffi-dev (ctypes); run it niced on a shared machine.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
deps=${PY_DEPS:-$root/.deps/python}
build_args=()
declare -A given=()
while [ $# -gt 0 ]; do
  case "$1" in
    -B) build_args=(-B "$2"); shift 2 ;;
    --source) given[${2%%=*}]=${2#*=}; shift 2 ;;
    *) break ;;
  esac
done
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.14 3.15)
src="$deps/src"
mkdir -p "$src/apt/state/lists/partial" "$src/apt/cache/archives/partial" "$deps/ft"

# Source packages (deb-src, always sid) in an apt state of their own: not lib/debian-apt.sh's binary lists.
fetch_source() {  # $1 = 3.14: leaves $src/Python-<x.y.z>.tar.xz
  ls "$src"/python"$1"_*.orig.tar.* >/dev/null 2>&1 && return 0
  printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main\n' \
    > "$src/apt/sources.list"
  cat > "$src/apt/apt.conf" <<EOF
Dir::Etc::sourcelist "$src/apt/sources.list";
Dir::Etc::sourceparts "/nonexistent";
Dir::State "$src/apt/state";
Dir::State::status "$src/apt/state/status";
Dir::Cache "$src/apt/cache";
Debug::NoLocking "1";
EOF
  touch "$src/apt/state/status"
  export APT_CONFIG="$src/apt/apt.conf"
  [ -s "$src/apt/updated" ] || { apt-get update -qq && date > "$src/apt/updated"; } || return 1
  (cd "$src" && apt-get source --download-only -qq "python$1") && return 0
  fetch_ubuntu_source "$1"
}

# Where Debian's mirror serves no source packages: Ubuntu's archive, over
# HTTPS, whose source indexes (development release first, then the latest
# release) list each orig tarball with its SHA-256 or SHA-512; the first
# listed tarball the archive serves and whose checksum matches is kept.
fetch_ubuntu_source() {  # $1 = 3.14
  local suite comp algo sum name dir
  for suite in devel resolute; do
    for comp in main universe; do
      curl -fsS --max-time 120 "https://archive.ubuntu.com/ubuntu/dists/$suite/$comp/source/Sources.xz" 2>/dev/null |
        xz -dc 2>/dev/null |
        awk -v pkg="python$1" '
          function flush() { if (p) for (i = 0; i < n; i++) print o[i], d; p = 0; n = 0; d = "" }
          /^$/ { flush(); next }
          /^Package: / { p = ($2 == pkg) }
          /^Directory: / { d = $2 }
          /^[^ ]/ { c = /^Checksums-Sha256:/ ? "sha256" : /^Checksums-Sha512:/ ? "sha512" : ""; next }
          c != "" && $3 ~ /orig\.tar/ { o[n++] = c " " $1 " " $3 }
          END { flush() }'
    done
  done > "$src/ubuntu-candidates"
  while read -r algo sum name dir; do
    echo "trying https://archive.ubuntu.com/ubuntu/$dir/$name"
    curl -fsS --max-time 600 -o "$src/$name.part" "https://archive.ubuntu.com/ubuntu/$dir/$name" || continue
    if [ "$("${algo}sum" < "$src/$name.part" | cut -d' ' -f1)" = "$sum" ]; then
      mv "$src/$name.part" "$src/$name"
      echo "fetched $name from Ubuntu's archive ($algo as its source index lists)"
      return 0
    fi
    echo "$name: checksum differs from the index; discarded"
  done < "$src/ubuntu-candidates"
  rm -f "$src"/*.part
  return 1
}

pythons=()
failed=0
for v in "${versions[@]}"; do
  prefix="$deps/ft/${v}t"
  if [ ! -x "$prefix/bin/python${v}t" ]; then
    tarball=${given[$v]:-}
    if [ -z "$tarball" ]; then
      fetch_source "$v" > "$src/fetch-$v.log" 2>&1 || {
        echo "python${v}t: not built: neither Debian's nor Ubuntu's archive served a source package for python$v" \
             "($(grep -m1 -o '[0-9]\{3\}  *Not Found\|Failed.*' "$src/fetch-$v.log" || tail -1 "$src/fetch-$v.log"));" \
             "give its CPython sources with --source $v=PATH"
        failed=1; continue
      }
      tarball=$(ls "$src"/python"$v"_*.orig.tar.* | head -1)
    fi
    work=$(mktemp -d)
    echo "python${v}t: building from $(basename "$tarball") (log: $work.log)"
    start=$(date +%s)
    if { if [ -d "$tarball" ]; then cp -a "$tarball/." "$work"; else tar -xf "$tarball" -C "$work" --strip-components=1; fi; } &&
       (cd "$work" && ./configure -q --disable-gil --prefix="$prefix" --without-ensurepip &&
        make -s -j"$(nproc)" && make -s altinstall) > "$work.log" 2>&1; then
      echo "python${v}t: built in $(( $(date +%s) - start )) s"
      rm -rf "$work"
    else
      echo "python${v}t: build failed, see $work.log"; failed=1; continue
    fi
  fi
  pythons+=("$prefix/bin/python${v}t")
done
[ ${#pythons[@]} -gt 0 ] || exit 1
"$here/python-versions.sh" "${build_args[@]}" "${pythons[@]}" || failed=1
exit $failed
