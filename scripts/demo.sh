#!/usr/bin/env bash
# The main job: GPU-or-host pub/sub across two emulated hosts (a daemon
# each, bridged), publisher and subscriber processes exchanging large
# messages, every byte verified.
source "$(dirname "$0")/setup.sh"
go build -o build/rgaps ./cmd/rgaps
exec build/rgaps demo "$@"
