# Cross-compiling agentexec for aarch64 Linux on a Debian x86_64 host (`make dist
# ARCH=aarch64`). Debian's cross compiler (g++-aarch64-linux-gnu) is multiarch-aware: with
# the arm64 foreign architecture enabled, the target's libraries (libssl-dev:arm64, ...)
# install under /usr/lib/aarch64-linux-gnu and the compiler finds them there by itself, while
# the header-only libraries (RapidJSON, CLI11, fmt, toml++) are architecture-independent and
# shared with the host. scripts/install-deps.sh dist-aarch64 installs all of it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_STRIP aarch64-linux-gnu-strip)

# Programs run on the host; libraries come only from the target's multiarch directory (the
# library architecture above puts /usr/lib/aarch64-linux-gnu first); headers and CMake
# package files from both (the header-only packages live in the host's /usr).
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config (libseccomp) must read the target's .pc files, never the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")

# ctest and try_run() run target binaries through qemu-user when it is installed.
find_program(AE_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(AE_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${AE_QEMU_AARCH64})
endif()
