#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages Sniper builds and tests with. Idempotent: does nothing when
# everything is already installed. Needs root (or sudo) only when something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  clang libclang-rt-dev
  libgtest-dev libgmock-dev
  nlohmann-json3-dev libicu-dev liburing-dev
  libcpp-httplib-dev libedit-dev
  libcurl4-openssl-dev libssl-dev
  libpng-dev libjpeg62-turbo-dev libwebp-dev libgif-dev
  libsndfile1-dev libvorbis-dev libopusfile-dev libsamplerate0-dev
  libstb-dev python3-numpy
  libopenmpi-dev openmpi-bin
  chromium tmux
  # clang-tidy 14 for scripts/tidy.sh, which CI runs on the files a commit changes (1.5 MB; with
  # clang-tools-14 and python3-yaml beside clang's packages, about 8 MB of .deb).
  clang-tidy-14
  # The aarch64 cross build (preset ci-arm64, cmake/aarch64-linux-gnu.cmake): Debian's cross
  # compiler, qemu's user-mode emulator for its tests, and the :arm64 builds of the libraries
  # above (multiarch; they need `dpkg --add-architecture arm64`, done below).
  g++-aarch64-linux-gnu qemu-user-static
  libgtest-dev:arm64 libgmock-dev:arm64
  libicu-dev:arm64 liburing-dev:arm64
  libcpp-httplib-dev:arm64 libedit-dev:arm64
  libcurl4-openssl-dev:arm64 libssl-dev:arm64
  libpng-dev:arm64 libjpeg62-turbo-dev:arm64 libwebp-dev:arm64 libgif-dev:arm64 libstb-dev:arm64
  libsndfile1-dev:arm64 libvorbis-dev:arm64 libopusfile-dev:arm64 libsamplerate0-dev:arm64
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js runs the client-side tests (the official openai npm client, the browser test). A
# machine whose node came from elsewhere (NodeSource) already has npm; only a machine without
# node gets Debian's.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  # The :arm64 packages come from the same Debian mirror once dpkg knows the architecture; the
  # :arm64 and native builds of a library must be the same version, so apt may upgrade a native
  # one to the mirror's current point release.
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then $SUDO dpkg --add-architecture arm64; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The npm packages the JS tests use, pinned by tests/js/package-lock.json (installed once; again
# when the lock file changes).
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ -f "$root/tests/js/package-lock.json" ]; then
  stamp="$root/tests/js/node_modules/.sniper-lock"
  if ! cmp -s "$root/tests/js/package-lock.json" "$stamp" 2>/dev/null; then
    echo "installing npm packages for tests/js"
    (cd "$root/tests/js" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$root/tests/js/package-lock.json" "$stamp"
  fi
fi
