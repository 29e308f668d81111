#!/usr/bin/env bash
# The test suite: vet, then every test with the race detector. Tests that
# need missing hardware skip and say why.
source "$(dirname "$0")/setup.sh"
go vet ./...
go test -race -count=1 -timeout 40m ./... "$@"
