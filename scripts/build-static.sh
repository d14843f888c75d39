#!/usr/bin/env bash
# Builds the binaries the Debian package ships, the way it ships them, into .build-static/
# (a scratch path of its own: static-runtime objects must not mix with the ordinary release
# tree). Used by package-deb.sh, `make mwctl-static` and the benchmarks, so what is measured is
# what is installed.
#
#   scripts/build-static.sh [PRODUCT...]     # default: mwgated mwctl
#   scripts/build-static.sh --bin-path        # prints the directory the binaries land in
#   MWGATE_SWIFT_SDK=ID scripts/build-static.sh   # cross-build with an installed Swift SDK
#                                               # (`swift sdk list`), e.g. for a Raspberry Pi
#
# Any architecture the toolchain targets (x86_64, aarch64): the binaries land under the
# target's triple and the static Swift runtime is the toolchain's own for that architecture
# (swift_static/linux/<arch>/swiftrt.o beside the static libraries), checked before building.
#
# Link choices, each for the daemon's resident memory on a small board:
# - --static-swift-stdlib: the Pi needs no Swift toolchain, and startup skips the loader's
#   work for a dozen Swift libraries.
# - One section per function (Swift and C), so --gc-sections drops dead code function by
#   function: the stripped mwgated shrinks from 81.6 to 76.6 MB.
# - lld with packed relative relocations (-z pack-relative-relocs, glibc >= 2.36 as in
#   Debian 12): the loader reads ~30 kB of relocations at start instead of 3.3 MB, pages that
#   otherwise stay resident for the life of the process.
# - --no-export-dynamic: the Swift static-link defaults export every symbol of our own code
#   (52,000 of them: 4.6 MB of symbol tables, 2.5 MB of it resident once the loader has looked). Nothing looks our symbols up
#   at run time: no plugins, no dlsym; crash backtraces read the symbol table of the file.
# - packaging/mwgated.order (lld --symbol-ordering-file): every function the daemon executes,
#   packed together at the start of .text. The kernel maps file pages in 64 kB fault-around
#   windows, so code spread among cold functions keeps the cold ones resident too. Made by
#   `make orderfile` (scripts/orderfile/); names it does not find are skipped, so a stale
#   order costs memory, never a failed link. MWGATE_NO_ORDER=1 links without it (to compare).
#   The Swift compiler's unnamed helper functions (outlined copies, objectdestroy: no symbol
#   for the order to name) that the daemon runs are placed by packaging/mwgated-unnamed.ld, a
#   linker script naming their object files and sections, in an output section of their own
#   just before .text; made by `make orderfile` too, unmatched entries are ignored.
# - libstdc++ linked in (libstdc++.a, GCC's runtime library exception) instead of loaded: the
#   shared libstdc++.so kept 1.4 MB resident in mwgated (its scattered code brought in 64 kB at
#   a time, its 450 kB of symbol tables read by the loader) for the few parts the Swift runtime,
#   libdispatch and ICU use, which linked in take ~0.2 MB and sit with the rest of the code.
#   SwiftPM passes -lstdc++ itself, so a libstdc++.a beside the objects (the first directory the
#   link searches) is what it finds. Native builds only (a cross SDK keeps the shared library);
#   MWGATE_SHARED_LIBSTDCXX=1 links the shared one (to compare).
set -euo pipefail
cd "$(dirname "$0")/.."
flags=(-c release --static-swift-stdlib --scratch-path .build-static
       -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xcc -fdata-sections
       -Xswiftc -use-ld=lld
       -Xlinker -z -Xlinker pack-relative-relocs
       -Xlinker --no-export-dynamic)
if [[ -n "${MWGATE_SWIFT_SDK:-}" ]]; then
    flags+=(--swift-sdk "$MWGATE_SWIFT_SDK")
elif [[ "${1:-}" != --bin-path ]]; then
    # A toolchain without the static runtime for this machine fails late with a linker error
    # naming swiftrt.o; say what is missing instead.
    resource=$(swift -print-target-info | sed -n 's/.*"runtimeResourcePath": *"\(.*\)".*/\1/p' | head -1)
    machine=$(uname -m)
    static_dir=$(dirname "$resource")/swift_static/linux
    if [[ ! -f "$static_dir/$machine/swiftrt.o" || ! -f "$static_dir/libswiftCore.a" ]]; then
        echo "build-static.sh: this Swift toolchain has no static runtime for $machine ($static_dir/$machine/swiftrt.o," >&2
        echo "  $static_dir/libswiftCore.a): install swift.org's full toolchain for $machine, or cross-build with MWGATE_SWIFT_SDK" >&2
        exit 1
    fi
fi
order=$PWD/packaging/mwgated.order
unnamed=$PWD/packaging/mwgated-unnamed.ld
if [[ -s "$order" && -z "${MWGATE_NO_ORDER:-}" ]]; then
    flags+=(-Xlinker "--symbol-ordering-file=$order" -Xlinker --no-warn-symbol-ordering)
fi
# MWGATE_NO_UNNAMED=1 leaves the script out: make orderfile profiles such a binary, since
# valgrind attributes code outside .text to no object and the profile would miss it.
if [[ -s "$unnamed" && -z "${MWGATE_NO_ORDER:-}" && -z "${MWGATE_NO_UNNAMED:-}" ]]; then
    flags+=(-Xlinker "--script=$unnamed")
fi
# MWGATE_LINK_MAP=FILE: lld's link map of mwgated in FILE (make orderfile finds the unnamed
# functions' sections in it); mwgated is linked again to write it.
if [[ -n "${MWGATE_LINK_MAP:-}" ]]; then
    flags+=(-Xlinker "-Map=$MWGATE_LINK_MAP")
fi
if [[ "${1:-}" == --bin-path ]]; then
    swift build "${flags[@]}" --show-bin-path
    exit 0
fi
# Neither the link order's contents nor adding or removing the libstdc++.a beside the objects
# is an input SwiftPM watches: remove the binaries so they are linked again.
bin_path=$(swift build "${flags[@]}" --show-bin-path)
static_cxx=$bin_path/libstdc++.a
had_static_cxx=$([[ -e "$static_cxx" ]] && echo yes || true)
rm -f "$static_cxx"
if [[ -z "${MWGATE_SWIFT_SDK:-}" && -z "${MWGATE_SHARED_LIBSTDCXX:-}" ]]; then
    clang=$(dirname "$(command -v swift)")/clang
    [[ -x "$clang" ]] || clang=clang
    archive=$("$clang" -print-file-name=libstdc++.a 2>/dev/null || true)
    if [[ "$archive" == /* && -f "$archive" ]]; then
        mkdir -p "$bin_path"
        ln -s "$archive" "$static_cxx"
    else
        echo "build-static.sh: no libstdc++.a (Debian: libstdc++-12-dev): linking the shared libstdc++" >&2
    fi
fi
products=("$@")
[[ ${#products[@]} -gt 0 ]] || products=(mwgated mwctl)
for product in "${products[@]}"; do
    [[ "$had_static_cxx" == "$([[ -e "$static_cxx" ]] && echo yes || true)" ]] || rm -f "$bin_path/$product"
    for layout in "$order" "$unnamed"; do
        [[ ! -s "$layout" || -n "${MWGATE_NO_ORDER:-}" || "$layout" -ot "$bin_path/$product" ]] || rm -f "$bin_path/$product"
    done
    [[ -z "${MWGATE_LINK_MAP:-}" || "$product" != mwgated ]] || rm -f "$bin_path/$product"
    swift build "${flags[@]}" --product "$product" ${SWIFT_FLAGS:-}
done
