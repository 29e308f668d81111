// Package control is the daemon-to-daemon control protocol of the
// inter-host bridge: two rgapsd daemons connect over TCP, prove to each
// other that they hold the same cluster secret, and then exchange typed
// JSON messages (topic interest, graph, ring parameters: the daemon
// defines those) and heartbeats.
//
// What it owns:
//
//   - framing version 2 (below): Conn, with a write mutex, write timeouts,
//     strict validation of everything read, sealing of every frame after
//     the handshake, and statistics;
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
//   - protect the data path: ring memory is written by the transports,
//     not through this connection (run them over WireGuard or IPsec, or
//     on an isolated network, where someone on the path is a concern).
//
// # Framing, version 2
//
// A control connection is a TCP byte stream of frames, in both directions:
//
//	off len field    value
//	  0   4 magic    "RGCP" (0x52 0x47 0x43 0x50)
//	  4   1 version  2
//	  5   1 type     MsgType, 1…255 (0 invalid)
//	  6   2 flags    u16 LE: bit 0 sealed (FlagSealed); other bits are errors
//	  8   4 length   u32 LE, payload bytes: ≤ MaxFrame (1 MiB = 1048576) in
//	                 clear, ≤ MaxFrame+TagLen sealed
//	 12   8 seq      u64 LE: 0 in clear; sealed: 1, 2, 3, … per direction
//	 20   …  payload length bytes: one JSON object (UTF-8, RFC 8259) in
//	         clear, or its AES-256-GCM sealing (ciphertext ‖ 16-byte tag)
//
// The handshake's frames are in clear (flags 0, seq 0); every frame after
// it, in both directions, is sealed: AES-256-GCM with the direction's key
// (Handshake derives both), nonce = 4 zero bytes ‖ seq as u64 LE, and the
// 20-byte header as additional data, so type, length and sequence number
// are authenticated too. The receiver wants exactly the next sequence
// number: a frame in clear, a tag that fails, or a sequence number that is
// not the next (a replayed, reordered or dropped frame) is ErrIntegrity
// and ends the connection. Version 1 (a 12-byte header, no sealing) is
// refused with ErrVersion naming both versions.
//
// Why AES-GCM from the standard library rather than ChaCha20-Poly1305 from
// golang.org/x/crypto: no new dependency, hardware-accelerated and
// constant-time on the x86-64 and arm64 CPUs daemons run on, and the
// control plane carries a few messages per second (data goes through the
// rings), so the choice costs nothing measurable either way.
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
// length is known to be at most MaxFrame+TagLen: the magic (ErrProtocol:
// "not an rgaps control stream") and the version (ErrVersion), read before
// the rest of the header, the flags, the length and the type
// (ErrProtocol), sealing and sequence against the connection's state
// (ErrIntegrity after the handshake, ErrProtocol before), a complete
// payload (ErrProtocol wrapping io.ErrUnexpectedEOF), its tag
// (ErrIntegrity), one JSON object (ErrProtocol). A stream that ends between
// frames is io.EOF. After a framing error the stream cannot be
// resynchronised: close the connection.
//
// # Handshake
//
// See Handshake for the messages, the MAC and the keys. Each side sends
// Hello (protocol version 2) with a fresh 32-byte nonce, the dialer proves
// knowledge of the secret with an HMAC over both Hellos, then the acceptor
// does, then both send Welcome and switch to sealed frames. The MACs bind
// the sender's role (dialer 1, acceptor 2), the domain, both host ids, both
// nonces and a hash of both Hellos as sent, so a MAC is never valid for
// another connection, another direction or another pair of hosts, and a
// Hello changed on the path fails the handshake. The frame keys come from
// HKDF-SHA256 over the secret and the same hash: fresh for every
// connection, one per direction. A side that refuses sends
// Reject{code, reason} first: the peer gets ErrRejected together with the
// sentinel for the code (ErrAuth, ErrDomain, …), while the refusing side
// gets the sentinel alone.
//
// # Listener
//
// Until a connection proves the secret it is a stranger's: its handshake
// must finish within DefaultPreAuthTimeout (2 s), at most
// DefaultMaxPending (256) run at once and DefaultMaxPendingPerAddr (16)
// per source address. The accept loop never waits: a connection over a
// limit takes the place of the oldest pending handshake (of its address,
// or of all), so the kernel's backlog stays empty and a real peer, whose
// handshake takes three round trips, gets through a flood of silent or
// trickling connections. Failed and dropped handshakes are logged through
// a LogLimiter (10 at once, then one a second; the rest counted).
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
