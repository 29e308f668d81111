// Package bridge is the inter-host half of the rgaps daemon (rgapsd): it
// carries the topics of one host's domain to and from the daemons of
// other hosts (docs/ARCHITECTURE.md §3.8, §3.9).
//
// It owns the daemon's peers and their control sessions (bridge/control),
// the exchange of interest and graphs between them, the offer and
// acceptance of rings, and for every ring the publish manager (writerLink,
// which takes local samples and writes them into a peer's ring) and the
// subscribe manager (readerLink, which reads its own ring and republishes
// on this host through the engine); it serves the status socket
// (bridge/status) for the CLI and the rmw. Run is the daemon's whole work:
// the GPU pool server (zerocopy/gpupool) and, when configured, the bridge.
//
// What it must not do: use unsafe, or touch ring memory except through
// bridge/ring (the protocol) and the transport (bridge/transport); import a
// front end (the Go API, rmw, the commands) or type support: it forwards
// bytes for every front end alike and never decodes a message; catch
// signals or parse the process's command line itself (BindFlags is a
// helper its command calls; Run returns when its context is cancelled).
// A peer is authenticated before it is trusted, and what it sends is
// checked against limits.go before use.
package bridge
