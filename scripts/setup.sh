# Sourced by demo.sh and test.sh: installs what rmw_rgaps needs on a fresh
# Debian 12 machine (as root) and puts a Go toolchain on PATH.
#
# - Go: the module needs Go 1.26. If no go >= 1.21 is on PATH (or in
#   /usr/local/go), Debian's golang-1.23 is installed from bookworm-backports;
#   its toolchain switching (GOTOOLCHAIN=auto) then fetches the exact Go
#   version go.mod names through the Go module proxy.
# - gcc: cgo (the race detector, and later libfabric and the rmw library).
# - g++: the rmw library's C++ part (messages of C++ type supports) and its tests.
# - util-linux (Essential, so normally present): nsenter(1) runs the
#   processes of the two emulated hosts in their network namespaces.
set -euo pipefail

need_apt=()
have_go() {
	command -v go >/dev/null 2>&1 || return 1
	local v
	v=$(go env GOVERSION 2>/dev/null | sed -E 's/^go1\.([0-9]+).*/\1/')
	[[ "$v" =~ ^[0-9]+$ ]] && ((v >= 21))
}

if ! have_go && [ -x /usr/local/go/bin/go ]; then
	export PATH=/usr/local/go/bin:$PATH
fi
if ! have_go; then
	if ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
		echo "deb http://deb.debian.org/debian bookworm-backports main" >/etc/apt/sources.list.d/rgaps-backports.list
	fi
	need_apt+=(golang-1.23-go)
	export PATH=/usr/lib/go-1.23/bin:$PATH
fi
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc libc6-dev)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
command -v git >/dev/null 2>&1 || need_apt+=(git)
{ pkg-config --exists libfabric 2>/dev/null && dpkg -s libfabric-dev >/dev/null 2>&1; } || need_apt+=(libfabric-dev pkg-config)
# Cyclone DDS 0.10.2: headers for package dds (libddsc is loaded at run time);
# idlc (cyclonedds-tools) builds the C program of dds' interop test.
{ dpkg -s cyclonedds-dev >/dev/null 2>&1 && command -v idlc >/dev/null 2>&1; } || need_apt+=(cyclonedds-dev cyclonedds-tools)
# util-linux: nsenter(1) starts the processes of the two emulated hosts in
# their network namespaces (internal/netns makes the namespaces and the veth
# pair itself, over rtnetlink); without it the demo falls back to loopback
# and the namespace tests skip.
command -v nsenter >/dev/null 2>&1 || need_apt+=(util-linux)
# iceoryx 2.0.3: RouDi and the C binding of `rgaps-bench e2e`'s baseline (loaded at run time).
{ command -v iox-roudi >/dev/null 2>&1 && dpkg -s libiceoryx-binding-c-dev >/dev/null 2>&1; } || need_apt+=(iceoryx libiceoryx-binding-c-dev)
if ((${#need_apt[@]})); then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need_apt[@]}" ca-certificates >/dev/null
fi
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
export GOFLAGS=${GOFLAGS:-}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go mod download
