#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the benchmarks need.
# Does nothing (and needs no network) when they are all present already.
set -euo pipefail

packages=(
  g++ cmake ninja-build                 # compiler and build
  antlr4 default-jre-headless           # the ANTLR tool (a Java program) for grammar/LPU.g4
  libantlr4-runtime-dev uuid-dev        # ANTLR C++ runtime; it links -luuid without depending on it
  libboost-dev                          # Spirit X3
  llvm-14-dev llvm-14-tools             # LLVM Support; lit, FileCheck, not, split-file
  libcli11-dev                          # every command line
  libgtest-dev googletest               # unit tests
  python3 python3-numpy                 # lit runs on python3; numpy gives independent reference numbers
  afl++ libopenblas0-pthread            # scripts/fuzz.sh; OpenBLAS behind numpy for bench/sim_matmul.sh
  libopenblas-dev                       # the reference interpreter's matmul and convolution kernels
  python3-torch                         # an independent reference for model tests, and the CPU baseline in bench/
  ccache                                # shares compiled objects between build trees
  libonnx-dev libprotobuf-dev           # lpu-import reads ONNX models through their protobuf definitions
  python3-onnx python3-torchvision      # import tests: models exported from PyTorch, bad models built with onnx.helper
  chromium python3-pil                  # the HTML schedule report's test: a headless browser renders it, a screenshot is checked
  libopenmpi-dev openmpi-bin            # lpurun over MPI ranks (sim/mpi/), mpirun for its tests
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
