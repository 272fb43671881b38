# SPDX-License-Identifier: MIT
# Cross-compiles Sniper for 64-bit ARM Linux from an x86-64 Debian host with the distribution's
# cross toolchain (g++-aarch64-linux-gnu) and its multiarch :arm64 library packages
# (scripts/install-deps.sh installs both). Used by the ci-arm64 preset; by hand:
#   cmake -B build/arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# Tests and the CLI run through qemu-aarch64 (user mode, `-cpu max`: every ARMv8/v9 extension,
# dotprod and i8mm among them), which ctest uses as the cross-compiling emulator. The :arm64 libc
# installs its loader as /lib/ld-linux-aarch64.so.1, so qemu needs no -L sysroot.
# A native aarch64 build needs none of this: plain `cmake --preset ci` works there.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Libraries and headers come from the multiarch directories (/usr/lib/aarch64-linux-gnu and the
# arch-independent /usr/include, /usr/share); programs (pkg-config, qemu) from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

find_program(SNIPER_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(SNIPER_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${SNIPER_QEMU_AARCH64};-cpu;max" CACHE STRING "runs the aarch64 tests")
endif()
