#!/usr/bin/env bash
# The main job: a publisher and subscriber processes exchanging large
# messages through shared memory, every byte verified.
source "$(dirname "$0")/setup.sh"
go build -o build/rgaps ./cmd/rgaps
exec build/rgaps demo "$@"
