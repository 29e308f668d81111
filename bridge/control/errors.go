package control

import "errors"

// ErrProtocol reports a peer (or, from Send, a caller) that broke the
// framing or the message rules: bad magic, nonzero flags, type 0, a length
// over MaxFrame, a truncated frame (wrapping io.ErrUnexpectedEOF), a payload
// that is not one JSON object, unknown JSON fields, an unexpected message
// in the handshake or a reserved type after it. The connection should be
// closed: after a framing error the stream cannot be resynchronised.
var ErrProtocol = errors.New("rgaps control protocol violation")

// ErrVersion reports a frame version other than Version, or a peer whose
// Hello announces a protocol version other than ProtocolVersion.
var ErrVersion = errors.New("unsupported rgaps control protocol version")

// ErrTooLarge reports a message whose JSON encoding exceeds MaxFrame. The
// message is not sent and the connection stays usable.
var ErrTooLarge = errors.New("control message larger than MaxFrame")

// ErrAuth reports that the peer's MAC did not verify: it does not hold the
// cluster secret (or holds a different one). The verifier sends a Reject
// before returning it.
var ErrAuth = errors.New("peer failed authentication")

// ErrRejected reports that the peer refused the handshake with a Reject.
// The error also wraps the sentinel matching the peer's reason code (for
// instance ErrAuth when the peer could not verify our MAC), so
// errors.Is(err, ErrRejected) tells "the peer refused us" from "we refused
// the peer".
var ErrRejected = errors.New("rejected by peer")

// ErrDomain reports a peer in another ROS domain.
var ErrDomain = errors.New("peer is in another ROS domain")

// ErrSelf reports a peer with our own host id: the daemon connected to
// itself (its own address is in its peer list) or two hosts share an id.
var ErrSelf = errors.New("connected to self (peer has our host id)")

// ErrDuplicate reports a peer refused because another live daemon holds
// its host id (HandshakeConfig.Admit): two daemons were given one id.
var ErrDuplicate = errors.New("another live daemon holds this host id")

// ErrConfig reports an unusable configuration: a secret shorter than
// MinSecret, a missing host id, an unknown key or a bad value in a config
// file (the message names file:line), a bad peer entry, a secret file
// readable by others. Nothing was sent or opened.
var ErrConfig = errors.New("invalid control configuration")

// ErrDead reports a connection that was closed because nothing arrived from
// the peer for longer than the session's DeadAfter.
var ErrDead = errors.New("peer silent for longer than dead-after")

// ErrNotConnected reports a Session.Send while the session has no live,
// authenticated connection.
var ErrNotConnected = errors.New("no live control connection")

// ErrClosed reports use of a Session or Listener after Close.
var ErrClosed = errors.New("control session or listener closed")

// ErrIntegrity reports a frame after the handshake that is not what the
// authenticated peer sent: in clear, failing its authentication tag, or
// out of sequence (replayed, reordered or dropped on the path). The
// connection is lost; the session closes it.
var ErrIntegrity = errors.New("control frame failed its integrity check")
