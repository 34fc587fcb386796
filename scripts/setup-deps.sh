#!/usr/bin/env bash
# Installs the Debian packages libprof builds and tests with. Idempotent: it
# runs apt-get only when something is missing. The CUDA toolkit is expected at
# $CUDA_HOME (default /usr/local/cuda); it is not an apt package here.
set -euo pipefail

# chromium: the report page's browser tests (test/browser), headless.
packages=(cmake g++ make libspdlog-dev libfmt-dev catch2 zlib1g-dev nlohmann-json3-dev libbenchmark-dev python3 binutils clang libclang-rt-14-dev chromium)
# Node.js runs the browser tests; Debian's, unless a node with npm is there.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-deps: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda_home/bin/nvcc" ]; then
  echo "setup-deps: no CUDA toolkit at $cuda_home (set CUDA_HOME)" >&2
  exit 1
fi

# CPython 3.14 and 3.15 for the Python call-site tests, unpacked into
# .deps/python (nothing installed). Unreachable registry: the tests skip.
"$(dirname "$0")/python-debian.sh" || [ $? -eq 2 ]

# The browser tests' npm packages (playwright-core drives chromium; speedscope
# reads folded stacks), at the versions test/browser/package-lock.json pins.
browser_dir=$(cd "$(dirname "$0")/.." && pwd)/test/browser
if ! cmp -s "$browser_dir/package-lock.json" "$browser_dir/node_modules/.installed-lock.json"; then
  echo "setup-deps: npm ci in test/browser"
  (cd "$browser_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
   cp package-lock.json node_modules/.installed-lock.json)
fi
