#!/usr/bin/env bash
# Build bench/ns3/dumbbell.cc against ns-3.37 into bench/ns3/build/dumbbell.
#
# ns-3 comes from Debian's libns3-dev (3.37): headers in /usr/include/ns3/, libraries
# libns3-<module>.so. Its pkg-config files are broken, so the include directory and the
# libraries are found here by hand. An upstream install (headers in <prefix>/include/ns3.37/,
# libraries libns3.37-<module>-default.so) is recognised too. If no headers are found, the
# script installs libns3-dev with apt-get (a clean CI machine; needs root).
#
# Environment: CXX (default g++), NS3_PREFIX (extra prefix to search, e.g. /opt/ns3).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/build"
modules=(core network internet point-to-point applications traffic-control)

find_include() {
    local d
    for d in ${NS3_PREFIX:+"$NS3_PREFIX/include/ns3.37" "$NS3_PREFIX/include"} \
        /usr/include/ns3.37 /usr/local/include/ns3.37 /usr/include /usr/local/include; do
        if [[ -f "$d/ns3/core-module.h" && -f "$d/ns3/tcp-bbr.h" ]]; then
            echo "$d"
            return 0
        fi
    done
    return 1
}

if ! inc="$(find_include)"; then
    echo "build.sh: ns-3 headers not found; installing libns3-dev with apt-get" >&2
    if [[ $(id -u) -ne 0 ]]; then
        echo "build.sh: need root to run apt-get (or set NS3_PREFIX to an ns-3.37 install)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y libns3-dev || { apt-get update && apt-get install -y libns3-dev; }
    inc="$(find_include)" || { echo "build.sh: still no ns-3 headers after apt-get" >&2; exit 1; }
fi

# Library naming: Debian "libns3-core.so", upstream "libns3.37-core-default.so".
libdir=""
libs=()
for d in ${NS3_PREFIX:+"$NS3_PREFIX/lib" "$NS3_PREFIX/lib64"} /usr/lib/x86_64-linux-gnu /usr/lib \
    /usr/local/lib /usr/local/lib64; do
    if [[ -e "$d/libns3-core.so" ]]; then
        libdir="$d"
        for m in "${modules[@]}"; do libs+=("-lns3-$m"); done
        break
    fi
    if [[ -e "$d/libns3.37-core-default.so" ]]; then
        libdir="$d"
        for m in "${modules[@]}"; do libs+=("-lns3.37-$m-default"); done
        break
    fi
done
if [[ -z "$libdir" ]]; then
    echo "build.sh: ns-3 libraries (libns3-core.so or libns3.37-core-default.so) not found" >&2
    exit 1
fi

mkdir -p "$out"
cxx="${CXX:-g++}"
# Never pass the compiler's own system directories with -I / -rpath (that breaks #include_next).
extra=()
case "$inc" in /usr/include | /usr/local/include) ;; *) extra+=("-I$inc") ;; esac
case "$libdir" in /usr/lib/x86_64-linux-gnu | /usr/lib) extra+=("-L$libdir") ;;
    *) extra+=("-L$libdir" "-Wl,-rpath,$libdir") ;; esac
# --no-as-needed: ns-3 modules register their TypeIds (TcpBbr, FifoQueueDisc, ...) from static
# initialisers; a library referenced only by TypeId name must still be loaded.
set -x
"$cxx" -O2 -std=c++17 -DNDEBUG "${extra[@]}" "$here/dumbbell.cc" -o "$out/dumbbell" \
    -Wl,--no-as-needed "${libs[@]}"
