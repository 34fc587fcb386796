#!/usr/bin/env bash
# Installs the Debian packages libprof builds and tests with, and the tests'
# own interpreters and Python packages under .deps/. Idempotent: it runs
# apt-get only when something is missing, pip only when test/requirements*.txt
# changed. The CUDA toolkit is expected at
# $CUDA_HOME (default /usr/local/cuda); it is not an apt package here.
set -euo pipefail

# chromium: the report page's browser tests (test/browser), headless.
# python3-venv: `python3 -m venv` for the tests' Python packages (below).
# python3-dev: Python's headers, with which Triton (torch.compile) builds its
# launcher, a C extension, on first use (test_torch_compile.py).
packages=(cmake g++ make libspdlog-dev libfmt-dev catch2 zlib1g-dev nlohmann-json3-dev libbenchmark-dev python3 python3-venv python3-dev binutils clang libclang-rt-14-dev chromium)
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
# .deps/python (nothing installed). Unreachable registry: the tests skip, or
# fail under CI=true.
"$(dirname "$0")/python-debian.sh" || [ $? -eq 2 ]

# The tests' Python packages from PyPI (Playwright, Holistic Trace Analysis),
# hash-pinned in test/requirements*.txt, into the venv .deps/venv (nothing
# installed into the system Python; the wheels are kept outside the clone, in
# ~/.cache/libprof/wheels). Unreachable registry: the tests that need them
# skip, or fail under CI=true.
"$(dirname "$0")/python-venv.sh" || [ $? -eq 2 ]
