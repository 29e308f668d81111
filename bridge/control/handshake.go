package control

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"
)

const (
	// ProtocolVersion is the message-level protocol version a Hello
	// announces. It may change without the framing (Version) changing.
	ProtocolVersion = 2
	// MinSecret is the shortest cluster secret accepted (128 bits).
	MinSecret = 16
	// NonceLen is the length of the random nonce in a Hello.
	NonceLen = 32
	// DefaultHandshakeTimeout bounds a handshake when
	// HandshakeConfig.Timeout is zero.
	DefaultHandshakeTimeout = 5 * time.Second
	// DefaultPreAuthTimeout bounds the handshake of a connection a
	// Listener accepted (a stranger until it proved the secret) when
	// HandshakeConfig.Timeout is zero: a handshake takes three round trips,
	// so this is plenty for a real peer and short for one that holds the
	// connection open without finishing.
	DefaultPreAuthTimeout = 2 * time.Second
	// maxHostID bounds the host id and name a peer may announce.
	maxHostID = 255
	// macLabel separates these MACs from any other use of the secret.
	macLabel = "rgaps-control-v2"
	// Labels of the two directions' frame keys.
	keyLabelDialer   = "rgaps-control-v2 key dialer to acceptor"
	keyLabelAcceptor = "rgaps-control-v2 key acceptor to dialer"
)

// Roles bound into the MAC: a MAC computed by one side never verifies as
// the other side's, so a peer cannot reflect our MAC back to us.
const (
	roleDialer   = 1
	roleAcceptor = 2
)

// Hello is the first message of each side.
type Hello struct {
	Version  int      `json:"version"`
	Domain   int      `json:"domain"`
	HostID   string   `json:"host_id"`
	Name     string   `json:"name"`
	Nonce    []byte   `json:"nonce"` // NonceLen random bytes (base64 in JSON)
	Features []string `json:"features"`
	// Instance names the daemon process (random, fixed for its life): a
	// connection of another instance of a known host id means that host's
	// daemon restarted, and its older connections are dead. Absent (0):
	// not announced.
	Instance uint64 `json:"instance,omitempty"`
}

// Auth carries a side's MAC over both Hellos (see Handshake).
type Auth struct {
	MAC []byte `json:"mac"`
}

// Welcome ends a successful handshake.
type Welcome struct{}

// Reject ends a failed handshake. Code is one of the Reject* codes, so the
// peer can tell why without parsing Reason.
type Reject struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// Reject codes.
const (
	RejectAuth     = "auth"
	RejectDomain   = "domain"
	RejectVersion  = "version"
	RejectSelf     = "self"
	RejectProtocol = "protocol"
	// RejectDuplicate: the peer's host id belongs to another live daemon
	// (HandshakeConfig.Admit said so). Older daemons log the code as an
	// unknown rejection.
	RejectDuplicate = "duplicate"
)

// Heartbeat is the payload of TypeHeartbeat; Session sends and consumes it.
type Heartbeat struct {
	Seq      uint64 `json:"seq"`
	UnixNano int64  `json:"unix_nano"`
}

// HandshakeConfig is one side's part of a handshake.
type HandshakeConfig struct {
	// Secret is the cluster secret, at least MinSecret bytes.
	Secret []byte
	// HostID identifies this host in the cluster; it must be unique (a
	// peer with the same id is taken for ourselves: ErrSelf).
	HostID string
	// Name is informational (logs, `rgaps doctor`).
	Name string
	// Domain is the ROS domain; peers must share it.
	Domain int
	// Dialer is true on the side that opened the connection. The two sides
	// must disagree; Session and Listener set it.
	Dialer bool
	// Timeout bounds the whole handshake; DefaultHandshakeTimeout when 0.
	Timeout time.Duration
	// Features are announced to the peer, uninterpreted here.
	Features []string
	// Instance is announced to the peer (Hello.Instance), uninterpreted
	// here.
	Instance uint64
	// Admit, when set, judges a peer whose MAC verified, before this side
	// sends its Welcome (dialer) or its Auth (acceptor): a non-nil Reject
	// is sent to the peer, and the handshake fails with the error its code
	// stands for (ErrDuplicate for RejectDuplicate). remote is the peer's
	// address. It may be called from several handshakes at once.
	Admit func(peer Hello, remote string) *Reject
}

func (cfg *HandshakeConfig) check() error {
	if len(cfg.Secret) < MinSecret {
		return fmt.Errorf("%w: cluster secret of %d bytes, need at least %d", ErrConfig, len(cfg.Secret), MinSecret)
	}
	if cfg.HostID == "" || len(cfg.HostID) > maxHostID {
		return fmt.Errorf("%w: host id must be 1…%d bytes, got %d", ErrConfig, maxHostID, len(cfg.HostID))
	}
	return nil
}

// Handshake authenticates the peer on c and returns its Hello. Both sides
// hold the same secret; neither learns anything from the other's MAC
// without it.
//
//	dialer                          acceptor
//	Hello ───────────────────────►  ◄─────────────────────── Hello
//	  (both check version, domain, host id ≠ own, nonce length)
//	Auth{MAC(dialer)} ───────────►  verify; on failure Reject{auth}
//	verify; on failure ◄───────────── Auth{MAC(acceptor)}
//	  Reject{auth}
//	Welcome ─────────────────────►
//	                 ◄───────────── Welcome
//
// The acceptor checks the dialer's proof before it computes its own, so it
// never answers an unauthenticated dialer with a MAC; both sides verify,
// so a fake acceptor is caught too. The strict order also means no side
// closes with unread data in its buffer after a Reject, which would reset
// the connection before the peer read the reason.
//
// MAC = HMAC-SHA256(secret, lp("rgaps-control-v2") ‖ role ‖ domain ‖
// lp(sender id) ‖ lp(receiver id) ‖ lp(sender nonce) ‖ lp(receiver nonce) ‖
// lp(T)) where lp(x) is x's length as u32 LE followed by x, role is one
// byte (1 dialer, 2 acceptor: the sender's role), domain is an i64 LE and
// T = SHA-256(lp("rgaps-control-v2") ‖ lp(dialer's Hello) ‖ lp(acceptor's
// Hello)) over the Hello payloads as sent.
//
// After the Welcomes every frame is sealed (doc.go): each direction has
// its own AES-256-GCM key, HKDF-SHA256(secret, salt T, info "rgaps-control-v2
// key dialer to acceptor" or "… acceptor to dialer"), and each frame's
// nonce is its sequence number, 1, 2, 3, … per direction.
//
// Errors: ErrConfig (before any I/O), ErrVersion, ErrDomain, ErrSelf (each
// side detects these itself and sends a Reject as a courtesy), ErrAuth (we
// rejected the peer's MAC), ErrRejected wrapping the peer's reason and the
// matching sentinel, ErrProtocol for anything else unexpected, and I/O
// errors (os.ErrDeadlineExceeded when the peer is too slow). Handshake
// returns within Timeout; it does not close c on failure (the caller does)
// and clears the deadlines it set on success. On success c seals every
// later frame.
func Handshake(c *Conn, cfg HandshakeConfig) (peer Hello, err error) {
	if err := cfg.check(); err != nil {
		return Hello{}, err
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	deadline := time.Now().Add(timeout)
	if err := c.nc.SetDeadline(deadline); err != nil {
		return Hello{}, fmt.Errorf("handshake: %w", err)
	}
	h := handshake{c: c, cfg: &cfg, deadline: deadline}
	peer, err = h.run()
	if err != nil {
		return Hello{}, fmt.Errorf("handshake with %s: %w", c.RemoteAddr(), err)
	}
	if err := c.nc.SetDeadline(time.Time{}); err != nil {
		return Hello{}, fmt.Errorf("handshake: %w", err)
	}
	return peer, nil
}

type handshake struct {
	c        *Conn
	cfg      *HandshakeConfig
	deadline time.Time
}

func (h *handshake) run() (Hello, error) {
	own := Hello{
		Version:  ProtocolVersion,
		Domain:   h.cfg.Domain,
		HostID:   h.cfg.HostID,
		Name:     h.cfg.Name,
		Nonce:    make([]byte, NonceLen),
		Features: h.cfg.Features,
		Instance: h.cfg.Instance,
	}
	rand.Read(own.Nonce) // never fails (crypto/rand's contract)
	ownRaw, err := encode(TypeHello, own)
	if err != nil {
		return Hello{}, err
	}
	if err := h.c.sendPayload(TypeHello, ownRaw, h.deadline); err != nil {
		return Hello{}, err
	}
	var peer Hello
	peerRaw, err := h.recvRaw(TypeHello, &peer)
	if err != nil {
		return Hello{}, err
	}
	if err := h.checkHello(&peer); err != nil {
		return Hello{}, err
	}

	ownRole, peerRole := byte(roleAcceptor), byte(roleDialer)
	th := transcript(peerRaw, ownRaw)
	if h.cfg.Dialer {
		ownRole, peerRole = roleDialer, roleAcceptor
		th = transcript(ownRaw, peerRaw)
	}
	ownMAC := computeMAC(h.cfg.Secret, ownRole, h.cfg.Domain, own.HostID, peer.HostID, own.Nonce, peer.Nonce, th)
	wantMAC := computeMAC(h.cfg.Secret, peerRole, h.cfg.Domain, peer.HostID, own.HostID, peer.Nonce, own.Nonce, th)
	sendKey, recvKey, err := frameKeys(h.cfg.Secret, th, h.cfg.Dialer)
	if err != nil {
		return Hello{}, err
	}

	if h.cfg.Dialer {
		if err := h.c.send(TypeAuth, Auth{MAC: ownMAC}, h.deadline); err != nil {
			return Hello{}, err
		}
		if err := h.verify(wantMAC, &peer); err != nil {
			return Hello{}, err
		}
		if err := h.admit(&peer); err != nil {
			return Hello{}, err
		}
		if err := h.c.send(TypeWelcome, Welcome{}, h.deadline); err != nil {
			return Hello{}, err
		}
		if err := h.recv(TypeWelcome, &Welcome{}); err != nil {
			return Hello{}, err
		}
		return peer, h.c.startSealing(sendKey, recvKey)
	}
	if err := h.verify(wantMAC, &peer); err != nil {
		return Hello{}, err
	}
	if err := h.admit(&peer); err != nil {
		return Hello{}, err
	}
	if err := h.c.send(TypeAuth, Auth{MAC: ownMAC}, h.deadline); err != nil {
		return Hello{}, err
	}
	if err := h.recv(TypeWelcome, &Welcome{}); err != nil {
		return Hello{}, err
	}
	if err := h.c.send(TypeWelcome, Welcome{}, h.deadline); err != nil {
		return Hello{}, err
	}
	return peer, h.c.startSealing(sendKey, recvKey)
}

// verify receives the peer's Auth and checks it in constant time.
func (h *handshake) verify(want []byte, peer *Hello) error {
	var a Auth
	if err := h.recv(TypeAuth, &a); err != nil {
		return err
	}
	if !hmac.Equal(a.MAC, want) {
		h.reject(RejectAuth, "MAC does not verify: different cluster secret")
		return fmt.Errorf("%w: MAC of %q does not verify (different cluster secret?)", ErrAuth, peer.HostID)
	}
	return nil
}

// admit asks HandshakeConfig.Admit about the authenticated peer and
// rejects it when told to.
func (h *handshake) admit(peer *Hello) error {
	if h.cfg.Admit == nil {
		return nil
	}
	r := h.cfg.Admit(*peer, h.c.RemoteAddr().String())
	if r == nil {
		return nil
	}
	h.reject(r.Code, r.Reason)
	if s := rejectSentinel(r.Code); s != nil {
		return fmt.Errorf("%w: refused %q: %s", s, peer.HostID, r.Reason)
	}
	return fmt.Errorf("refused %q (%s): %s", peer.HostID, r.Code, r.Reason)
}

func (h *handshake) checkHello(p *Hello) error {
	switch {
	case p.Version != ProtocolVersion:
		h.reject(RejectVersion, fmt.Sprintf("protocol version %d, want %d", p.Version, ProtocolVersion))
		return fmt.Errorf("%w: peer speaks protocol version %d, this side %d", ErrVersion, p.Version, ProtocolVersion)
	case p.Domain != h.cfg.Domain:
		h.reject(RejectDomain, fmt.Sprintf("domain %d, want %d", p.Domain, h.cfg.Domain))
		return fmt.Errorf("%w: peer %q is in domain %d, this side in %d", ErrDomain, p.HostID, p.Domain, h.cfg.Domain)
	case p.HostID == "" || len(p.HostID) > maxHostID || len(p.Name) > maxHostID:
		h.reject(RejectProtocol, "host id or name empty or too long")
		return fmt.Errorf("%w: peer host id of %d bytes or name of %d bytes", ErrProtocol, len(p.HostID), len(p.Name))
	case p.HostID == h.cfg.HostID:
		h.reject(RejectSelf, "same host id")
		return fmt.Errorf("%w: %q", ErrSelf, p.HostID)
	case len(p.Nonce) != NonceLen:
		h.reject(RejectProtocol, fmt.Sprintf("nonce of %d bytes, want %d", len(p.Nonce), NonceLen))
		return fmt.Errorf("%w: peer nonce of %d bytes, want %d", ErrProtocol, len(p.Nonce), NonceLen)
	}
	return nil
}

// recv reads the next message, which must be of type want (decoded into v)
// or a Reject (turned into ErrRejected).
func (h *handshake) recv(want MsgType, v any) error {
	_, err := h.recvRaw(want, v)
	return err
}

// recvRaw is recv that also returns the message's payload as received.
func (h *handshake) recvRaw(want MsgType, v any) ([]byte, error) {
	t, payload, err := h.c.Recv()
	if err != nil {
		return nil, fmt.Errorf("waiting for %v: %w", want, err)
	}
	switch t {
	case want:
		if err := Decode(payload, v); err != nil {
			h.reject(RejectProtocol, err.Error())
			return nil, fmt.Errorf("%v message: %w", want, err)
		}
		return payload, nil
	case TypeReject:
		var r Reject
		if err := Decode(payload, &r); err != nil {
			return nil, fmt.Errorf("reject message: %w", err)
		}
		if s := rejectSentinel(r.Code); s != nil {
			return nil, fmt.Errorf("%w: %w: %q", ErrRejected, s, r.Reason)
		}
		return nil, fmt.Errorf("%w: %s: %q", ErrRejected, r.Code, r.Reason)
	}
	h.reject(RejectProtocol, fmt.Sprintf("got %v, want %v", t, want))
	return nil, fmt.Errorf("%w: got %v while waiting for %v", ErrProtocol, t, want)
}

// reject tells the peer why, best effort: the handshake fails either way.
func (h *handshake) reject(code, reason string) {
	_ = h.c.send(TypeReject, Reject{Code: code, Reason: reason}, h.deadline)
}

func rejectSentinel(code string) error {
	switch code {
	case RejectAuth:
		return ErrAuth
	case RejectDomain:
		return ErrDomain
	case RejectVersion:
		return ErrVersion
	case RejectSelf:
		return ErrSelf
	case RejectProtocol:
		return ErrProtocol
	case RejectDuplicate:
		return ErrDuplicate
	}
	return nil
}

// transcript is the hash of both Hellos as they were sent: the MACs and
// the frame keys cover it, so nothing in a Hello (version, name,
// features) can be changed on the path unnoticed.
func transcript(dialerHello, acceptorHello []byte) []byte {
	m := sha256.New()
	for _, b := range [][]byte{[]byte(macLabel), dialerHello, acceptorHello} {
		m.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(b))))
		m.Write(b)
	}
	return m.Sum(nil)
}

// frameKeys derives the two directions' AES-256 frame keys with
// HKDF-SHA256 from the secret, salted with the transcript (fresh nonces:
// fresh keys for every connection), and returns ours and the peer's.
func frameKeys(secret, th []byte, dialer bool) (send, recv []byte, err error) {
	d2a, err := hkdf.Key(sha256.New, secret, th, keyLabelDialer, 32)
	if err != nil {
		return nil, nil, err
	}
	a2d, err := hkdf.Key(sha256.New, secret, th, keyLabelAcceptor, 32)
	if err != nil {
		return nil, nil, err
	}
	if dialer {
		return d2a, a2d, nil
	}
	return a2d, d2a, nil
}

// computeMAC is the MAC of Handshake's doc comment.
func computeMAC(secret []byte, role byte, domain int, sender, receiver string, senderNonce, receiverNonce, th []byte) []byte {
	m := hmac.New(sha256.New, secret)
	lp := func(b []byte) {
		m.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(b))))
		m.Write(b)
	}
	lp([]byte(macLabel))
	m.Write([]byte{role})
	m.Write(binary.LittleEndian.AppendUint64(nil, uint64(int64(domain))))
	lp([]byte(sender))
	lp([]byte(receiver))
	lp(senderNonce)
	lp(receiverNonce)
	lp(th)
	return m.Sum(nil)
}
