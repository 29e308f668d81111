// Package control is the daemon-to-daemon control protocol of the
// inter-host bridge: two rgapsd daemons connect over TCP, prove to each
// other that they hold the same cluster secret, and then exchange typed
// JSON messages (topic interest, graph, ring parameters: the daemon
// defines those) and heartbeats.
//
// What it owns:
//
//   - framing version 1 (below): Conn, with a write mutex, write timeouts,
//     strict validation of everything read, and statistics;
//   - strict decoding of payloads (Decode): unknown fields and trailing
//     data are errors;
//   - the mutual authentication handshake (Handshake, Hello, Auth,
//     Welcome, Reject) and the message types 1…15;
//   - Session: one supervised connection to a peer, with heartbeats,
//     death detection, and redialing with exponential backoff on the dial
//     side; Listener: accepting and authenticating connections;
//   - the daemon's control configuration: the config file (LoadConfig),
//     ROS_STATIC_PEERS-style peer lists (ParsePeers), ports (DefaultPort).
//
// What it must not do:
//
//   - know the daemon's messages (types 16…255 are the daemon's; this
//     package passes their payloads through), the ring protocol or the
//     transports: it carries what they need to agree on, nothing more;
//   - choose logging (a *slog.Logger is injected; nil is silent) or read
//     the environment;
//   - encrypt: the handshake authenticates the peer, but the messages
//     after it travel in clear and are not integrity-protected. A cluster
//     network is trusted against eavesdropping and tampering, not against
//     strangers connecting (run it over WireGuard or IPsec otherwise).
//
// # Framing, version 1
//
// A control connection is a TCP byte stream of frames, in both directions:
//
//	off len field    value
//	  0   4 magic    "RGCP" (0x52 0x47 0x43 0x50)
//	  4   1 version  1
//	  5   1 type     MsgType, 1…255 (0 invalid)
//	  6   2 flags    u16 LE, 0 (no flags are defined; nonzero is an error)
//	  8   4 length   u32 LE, payload bytes, ≤ MaxFrame (1 MiB = 1048576)
//	 12   …  payload length bytes: one JSON object (UTF-8, RFC 8259)
//
// Types 1…15 are this package's:
//
//	1 hello      {"version","domain","host_id","name","nonce","features"}
//	2 auth       {"mac"}
//	3 welcome    {}
//	4 reject     {"code","reason"}
//	5 heartbeat  {"seq","unix_nano"}
//	6…15         reserved
//
// Users (the daemon) define types 16…255. Byte strings (nonce, mac) are
// base64 in JSON, as encoding/json writes []byte.
//
// Recv checks, in this order, and never allocates a payload before the
// length is known to be at most MaxFrame: the magic (ErrProtocol: "not an
// rgaps control stream"), the version (ErrVersion), the flags, the length
// and the type (ErrProtocol), a complete payload (ErrProtocol wrapping
// io.ErrUnexpectedEOF) holding one JSON object (ErrProtocol). A stream that
// ends between frames is io.EOF. After a framing error the stream cannot be
// resynchronised: close the connection.
//
// # Handshake
//
// See Handshake for the messages and the MAC. Each side sends Hello with a
// fresh 32-byte nonce, the dialer proves knowledge of the secret with an
// HMAC over both Hellos, then the acceptor does, then both send Welcome.
// The MACs bind the sender's role (dialer 1, acceptor 2), the domain, both
// host ids and both nonces, so a MAC is never valid for another connection,
// another direction or another pair of hosts. A side that refuses sends
// Reject{code, reason} first: the peer gets ErrRejected together with the
// sentinel for the code (ErrAuth, ErrDomain, …), while the refusing side
// gets the sentinel alone.
//
// # Sessions
//
// A Session sends a heartbeat (type 5, {"seq", "unix_nano"}) every
// Heartbeat (500 ms) and consumes the peer's; any frame renews the peer's
// lease, and silence longer than DeadAfter (3 s) closes the connection
// (OnDown(ErrDead)). The dialing side redials with backoff from 100 ms
// doubling to 2 s until Close; the accepting side does not (the peer
// redials). When both daemons list each other as peers there are two
// connections per pair: which one to keep is the daemon's decision.
//
// # Config file
//
// See LoadConfig. Example:
//
//	# /etc/rgaps/control.conf
//	listen      = :7700
//	peer        = node-b; node-c:7710
//	peer        = [fd00::3]:7700
//	# mode 0600, relative to this file's directory
//	secret-file = cluster.secret
//	host-id     = node-a
//	heartbeat   = 500ms
//	dead-after  = 3s
//
// '#' starts a comment only at the start of a line, so that a secret may
// contain it; "peer = a # b" is an error, not a peer with a comment.
package control
