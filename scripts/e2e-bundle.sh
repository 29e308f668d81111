#!/usr/bin/env bash
# Collects what `rgaps-bench e2e`'s baseline needs from iceoryx into
# build/iox/, for a machine without a package registry (the GPU machine):
#
#   build/iox/bin/iox-roudi     RouDi, iceoryx's broker (the run starts and stops it)
#   build/iox/lib/*.so.2, ...   the iceoryx 2.0.3 libraries of Debian 12 and what
#                               they need beyond glibc and libstdc++ (libacl)
#   build/iox/VERSIONS          the Debian packages they came from
#   and, when build/rgaps exists, the libraries it links beyond glibc and
#   libstdc++ (libfabric and its dependencies: libibverbs, librdmacm, libnl,
#   libnuma, libpsm2, ...), which Ubuntu 24.04 on the GPU machine lacks.
#
# There: LD_LIBRARY_PATH=$PWD/build/iox/lib build/rgaps-bench e2e ...
# (LD_LIBRARY_PATH only for libfabric, which rgaps links; measured on the
# H100 machine on 2026-11-22, where `ip` is missing, so -netns cannot run).
#
# Run it here after scripts/gpu-build.sh (which empties build/), then carry
# build/ along. No LD_LIBRARY_PATH is needed there: rgaps (and a test binary
# in build/) loads the C binding with dlopen from iox/lib beside itself
# (or $RGAPS_IOX_LIB), the binding's own dependencies first by absolute
# path; iox-roudi is found in iox/bin beside the executable (or
# $RGAPS_IOX_ROUDI) and started with LD_LIBRARY_PATH=build/iox/lib.
# libstdc++, libgcc_s, libm and libc come from the target system (the
# bundle's libraries were built against Debian 12's, which newer systems
# such as Ubuntu 24.04 are compatible with).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v iox-roudi >/dev/null 2>&1 || ! dpkg -s libiceoryx-binding-c-dev >/dev/null 2>&1; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends iceoryx libiceoryx-binding-c-dev >/dev/null
fi

out=build/iox
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
cp -L "$(command -v iox-roudi)" "$out/bin/iox-roudi"

binding=$(ldconfig -p | awk '/libiceoryx_binding_c\.so\.2 / {print $NF; exit}')
[ -n "$binding" ] || { echo "libiceoryx_binding_c.so.2 not found" >&2; exit 1; }

# Every library the binding and RouDi load, by soname, except those the
# target system provides.
declare -A seen=()
collect() {
	ldd "$1" | awk '/=> \// {print $1, $3}' | while read -r soname path; do
		case "$soname" in
		libc.so.* | libm.so.* | libstdc++.so.* | libgcc_s.so.* | ld-linux*.so.* | libpthread.so.* | libdl.so.* | librt.so.*) continue ;;
		esac
		echo "$soname $path"
	done
}
{
	echo "libiceoryx_binding_c.so.2 $binding"
	collect "$binding"
	collect "$out/bin/iox-roudi"
	# rgaps itself links libfabric (bridge/transport/fabric), which the GPU
	# machine does not have: its libraries come along too (then run rgaps
	# with LD_LIBRARY_PATH=build/iox/lib).
	[ ! -x build/rgaps ] || collect build/rgaps
} | sort -u | while read -r soname path; do
	cp -L "$path" "$out/lib/$soname"
done

# Check: RouDi resolves everything it needs from the bundle (or from the
# system libraries listed above), and the binding's dependencies are all there.
missing=$(LD_LIBRARY_PATH="$out/lib" ldd "$out/bin/iox-roudi" | grep "not found" || true)
[ -z "$missing" ] || { echo "iox-roudi: $missing" >&2; exit 1; }
for l in libiceoryx_platform.so.2 libiceoryx_hoofs.so.2 libiceoryx_posh.so.2 libiceoryx_binding_c.so.2; do
	[ -f "$out/lib/$l" ] || { echo "$l missing from the bundle" >&2; exit 1; }
done

{
	echo "# Debian packages bundled by scripts/e2e-bundle.sh on $(date -u +%Y-%m-%d)"
	for p in iceoryx libiceoryx-binding-c2 libiceoryx-posh2 libiceoryx-hoofs2 libiceoryx-platform2 \
		libiceoryx-posh-roudi2 libiceoryx-posh-config2 libacl1 libfabric1; do
		dpkg-query -W -f '${Package} ${Version}\n' "$p" 2>/dev/null || true
	done
} >"$out/VERSIONS"
ls -la "$out/bin" "$out/lib"
du -sh "$out"
