#!/usr/bin/env bash
# Installs everything commstack needs to build and test on Debian 12, as root. Idempotent:
# packages already present are left as they are. CUDA/NCCL are optional and not installed here
# (the GPU calibration bench builds only when CMake finds them).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config ccache
  libsimgrid-dev libboost-graph-dev nlohmann-json3-dev doctest-dev libcli11-dev libfmt-dev
  libpugixml-dev zlib1g-dev
  libopen-trace-format2-dev otf2-tools  # OTF2: read Score-P traces, write simulated timelines for Vampir (otf2-print checks them)
  libopenmpi-dev openmpi-bin  # optional: commstack-bench with one MPI process per GPU, commstack sweep over MPI ranks (mpirun in its test)
  gnuplot-nox python3
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-deps: all ${#packages[@]} packages present"
