#!/usr/bin/env bash
# Developer script (not run by CI or scripts/test.sh): Debian's own PyTorch
# CUDA build, python3-torch-cuda 2.6 from the development distribution (sid,
# contrib; built against Debian's CUDA 12.4 packages), on the simulated
# stack's CUDA 12 personality, under libprof with default settings.
#
#  1. Fetches the package and the packages its libraries need without
#     installing anything (scripts/lib/debian-apt.sh: a private apt state
#     under the work folder, apt-get download, dpkg -x into <work>/root).
#     NVIDIA's runtime, driver, CUPTI, cuBLAS and NCCL packages are not
#     fetched: the sim's stand in (build/test/sim/lib12 and, for NCCL,
#     build/test/sim/lib). Debian's nvidia-cudnn only downloads cuDNN at
#     install time: the sim's libcudnn.so.9 stands in too.
#  2. Runs a PyTorch program (default: test/workloads/torch_train.py with
#     a few steps) with sid's python3.13 under sid's own loader
#     (<root>/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --library-path
#     <sim lib12>:<sim lib>:<root libs>), with LD_PRELOAD=build/libprof.so
#     and CUDA_INJECTION64_PATH=build/libprof.so, no PROF_* setting.
#  3. Prints what libprof wrote (its stderr lines and the windows' files).
#
# Usage: scripts/torch-debian.sh [--suite SUITE] [--work DIR] [--build DIR]
#                                [--fetch-only] [-- PROGRAM ARGS...]
# SUITE (default trixie): the Debian suite to take the packages from. The
# same build, python3-torch-cuda 2.6.0+dfsg-7+b1, is in trixie (Debian 13)
# and in the development distribution (sid), but in sid it no longer fits
# its neighbours: sid's python3 is 3.14 (the package wants << 3.14), its
# libonnx1t64 is gone (libonnx1l ships the sonames) and its gloo is newer
# than the one torch was built against, so libtorch_cpu.so's imports
# gloo::rendezvous::Store::~Store() and two others are undefined and
# `import torch` fails (Python loads extensions with RTLD_NOW). trixie
# holds the set it was built with. --suite sid shows that failure.
# About 100 packages, 2.2 GB unpacked, the first time; later runs reuse them.
# Exit status: 0 when the program ran, 2 when the registry cannot be
# reached, 1 otherwise (a one-line "torch-debian: ..." message says where it
# stopped and why).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
suite=trixie
work=
build=$root/build
fetch_only=0
prog=()
while [ $# -gt 0 ]; do
  case $1 in
    --work) work=$(mkdir -p "$2" && cd "$2" && pwd); shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --fetch-only) fetch_only=1; shift ;;
    --) shift; prog=("$@"); break ;;
    *) echo "usage: $0 [--suite SUITE] [--work DIR] [--build DIR] [--fetch-only] [-- PROGRAM ARGS...]" >&2; exit 1 ;;
  esac
done
work=${work:-${TORCH_DEBIAN_DEPS:-$root/.deps/torch-debian-$suite}}
export DEBIAN_SUITE=$suite
say() { echo "torch-debian: $*"; }
# shellcheck source-path=SCRIPTDIR source=lib/debian-apt.sh
. "$root/scripts/lib/debian-apt.sh"

# ---- 1. fetch and unpack ---------------------------------------------------
seeds=(python3-torch-cuda libtorch-cuda-2.6 python3.13 python3.13-minimal libpython3.13-minimal
       libpython3.13-stdlib python3-sympy python3-mpmath)
# libtorch names libonnx1t64, which sid no longer has: libonnx1l ships the sonames.
[ "$suite" = sid ] && seeds+=(libonnx1l)
# Not fetched: the sim stands in for NVIDIA's CUDA runtime, driver, CUPTI,
# cuBLAS, NCCL and cuDNN; the rest are tools and metapackages no import
# needs (python3 is sid's 3.14 metapackage), test-only packages, or
# libraries of other GPU stacks that only dpkg-level dependencies name.
skip='^(python3|python3-minimal|python3\.14.*|libpython3\.14.*|libpython3-stdlib|perl.*|libperl.*|debconf|cdebconf|dpkg|systemd.*|nvidia-.*|libnvidia-.*|glx-.*|update-glx|libcuda1|libcudart12|libcupti12|libcupti-dev|libcublas12|libcublaslt12|libnccl2|libnvblas12|dpkg-dev|libdpkg-perl|binutils.*|make|make-guile|patch|bzip2|xz-utils|libtorch-cuda-test|python3-hypothesis|python3-expecttest|libcu\+\+-dev|libcub-dev|libthrust-dev|python3-numpy-dev|libclang.*|libllvm.*|libamd.*|libhsa.*|libdrm.*|libze1|ocl-icd-libopencl1|khronos-opencl-icd-libopencl1|base-passwd|passwd|login.defs|opensysusers|tzdata|ca-certificates|openssl|openssl-provider-legacy|curl|wget|libaccinj64.*|libcuinj64.*|libnpp.*|libnvjpeg12|libxcb1|libxau6|libxdmcp6|libxext6|libxnvctrl0|readline-common|media-types|netbase|pci.ids|libpam.*|libaudit.*|libsemanage.*)$'

# resolve: the seeds and, transitively, their Depends/Pre-Depends (the first
# of alternatives), less $skip.
resolve() {
  local todo="${seeds[*]}" seen=" " next d p
  while [ -n "$todo" ]; do
    next=""
    for p in $todo; do seen+="$p "; done
    # shellcheck disable=SC2086
    for d in $(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
                 --no-replaces --no-enhances $todo 2>/dev/null |
               awk '$1 ~ /^\|?(Pre)?Depends:$/ { if (!alt) print $2; alt = ($1 ~ /^\|/) }'); do
      d=${d%:any}
      [[ $d == \<* || $d =~ $skip || "$seen" == *" $d "* || " $next " == *" $d "* ]] && continue
      next+=" $d"
    done
    todo=$next
  done
  echo "$seen"
}

sysroot=$work/root
if [ ! -f "$sysroot/.complete" ]; then
  debian_apt_setup "$work" main contrib non-free non-free-firmware
  rc=$?
  if [ $rc -ne 0 ] || ! apt-cache show python3-torch-cuda >/dev/null 2>&1; then
    say "${debian_apt_why:-$suite has no python3-torch-cuda}"; exit 2
  fi
  read -r -a pkgs <<<"$(resolve)"
  say "fetching ${#pkgs[@]} packages into $work/debs (about 2 GB the first time)"
  debian_apt_download "$work" "${pkgs[@]}" || { say "$debian_apt_why"; exit 2; }
  say "unpacking into $sysroot"
  debian_unpack "$work/debs" "$sysroot" || { say "dpkg -x failed"; exit 1; }
  touch "$sysroot/.complete"
fi
say "python3-torch-cuda $(dpkg-deb -f "$work"/debs/python3-torch-cuda_*.deb Version) ($suite) unpacked at $sysroot"
[ $fetch_only = 1 ] && exit 0

# ---- 2. run on the CUDA 12 personality under libprof ------------------------
sim12=$build/test/sim/lib12
sim=$build/test/sim/lib
prof=$build/agent/libprof.so
for f in "$sim12/libcudart.so.12" "$sim12/libcuda.so.1" "$sim12/libcupti.so.12" "$sim12/libcublas.so.12" \
         "$sim12/libcublasLt.so.12" "$sim/libnccl.so.2" "$sim/libcudnn.so.9" "$prof"; do
  [ -e "$f" ] || { say "$f is missing: build it first (scripts/build.sh, or cmake --build $build)"; exit 1; }
done
# The CUDA 12 personality first (runtime, driver, CUPTI, cuBLAS/cuBLASLt
# .12); then the default stack's folder for what has one soname in both
# (libnccl.so.2, libcudnn.so.9; its libcudart.so.13 and libcupti.so.13 are
# never asked for); then the unpacked system. Debian's libraries carry no
# RPATH, so the library path decides.
libpath="$sim12:$sim:$sysroot/usr/lib/x86_64-linux-gnu:$sysroot/lib/x86_64-linux-gnu:$sysroot/usr/lib"
py=(env -u PYTHONPATH -u PYTHONHOME "$sysroot/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$libpath"
    --argv0 "$sysroot/usr/bin/python3.13" "$sysroot/usr/bin/python3.13")
[ ${#prog[@]} -gt 0 ] || prog=("$root/test/workloads/torch_train.py" --steps 60)

# Which CUDA libraries the process really has mapped, after one kernel.
loaded=$("${py[@]}" -c '
import torch
torch.ones(4, device="cuda").mul_(2)
torch.cuda.synchronize()
names = ("libcudart", "libcuda.so", "libcupti", "libcublas", "libnccl", "libcudnn")
paths = sorted({l.split()[-1] for l in open("/proc/self/maps") if any(n in l for n in names)})
print(torch.__version__, "CUDA", torch.version.cuda, "|", torch.cuda.get_device_name(0), "|", " ".join(paths))
' 2>&1) || { say "import torch on the sim failed: $(echo "$loaded" | tail -1)"; exit 1; }
say "torch $loaded"

status=0
for mode in preload inject; do
  out=$work/run-$mode
  rm -rf "$out" && mkdir -p "$out"
  if [ $mode = preload ]; then envs=(LD_PRELOAD="$prof"); else envs=(CUDA_INJECTION64_PATH="$prof"); fi
  say "== ${envs[*]} ${prog[*]##*/} (default settings; output in $out)"
  # No PROF_* variable: libprof's defaults (find the loop, wait, record 5 steps).
  unset_prof=()
  for v in $(compgen -e PROF_); do unset_prof+=(-u "$v"); done
  (cd "$out" && env "${unset_prof[@]}" "${envs[@]}" \
     timeout 600 "${py[@]}" "${prog[@]}") > "$out/stdout.txt" 2>&1
  rc=$?
  grep -E '^\[libprof\]|steps in' "$out/stdout.txt"
  if [ $rc -ne 0 ]; then say "the program failed (exit $rc): $(tail -1 "$out/stdout.txt")"; status=1; continue; fi
  files=("$out"/prof-traces/*)
  if [ ! -e "${files[0]}" ]; then say "libprof wrote nothing"; status=1; continue; fi
  ls -1 "$out"/prof-traces
  for s in "$out"/prof-traces/*.summary.txt; do sed -n '1,/^== CUDA GPU Kernel Summary/p' "$s" | head -n -1; done
done
exit $status
