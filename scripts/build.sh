#!/usr/bin/env bash
# Configures and builds one tree. Usage: scripts/build.sh [--sanitize]
# The plain tree is build/, the AddressSanitizer+UBSan tree is build-asan/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan; extra=(-DLPU_SANITIZE=ON)
else
  dir=build; extra=()
fi
# ccache, when installed, makes rebuilds in several checkouts cheap: the
# paths it hashes are made relative to the checkout, and the build folder
# is left out of the hash (with -g it is in by default, so a second
# checkout would miss on every file; only the debug info's compile folder
# may then name the other checkout).
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  extra+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${extra[@]}" >/dev/null
cmake --build "$dir"
