package control

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// BasePort is the control port of domain 0; domain d listens on BasePort+d.
const BasePort = 7700

// Defaults LoadConfig fills in and Session applies.
const (
	DefaultHeartbeat  = 500 * time.Millisecond
	DefaultDeadAfter  = 3 * time.Second
	DefaultBackoffMin = 100 * time.Millisecond
	DefaultBackoffMax = 2 * time.Second
)

// DefaultPort is the control port of a ROS domain: one daemon per domain
// and host, so domains never share a port.
func DefaultPort(domain int) int { return BasePort + domain }

// Peer is the address of another host's daemon.
type Peer struct {
	Host string // name or IP address (IPv6 without brackets)
	Port int
}

// String is "host:port", with an IPv6 address in brackets: what net.Dial
// takes.
func (p Peer) String() string { return net.JoinHostPort(p.Host, strconv.Itoa(p.Port)) }

// ParsePeers parses a peer list in the style of ROS_STATIC_PEERS: entries
// separated by ';' (or ','), each "host", "host:port", "v6addr", "[v6addr]"
// or "[v6addr]:port"; the port defaults to DefaultPort(domain). Whitespace
// around entries is trimmed, empty entries are skipped and duplicates (same
// host, same port; IP addresses compared in canonical form, names without
// case) are dropped, keeping the first. A bad entry returns ErrConfig naming
// it.
func ParsePeers(list string, domain int) ([]Peer, error) {
	var out []Peer
	seen := map[Peer]bool{}
	for _, e := range strings.FieldsFunc(list, func(r rune) bool { return r == ';' || r == ',' }) {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		p, err := parsePeer(e, domain)
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

func parsePeer(e string, domain int) (Peer, error) {
	// A bare IP address first: an IPv6 address has colons but no port.
	if a, err := netip.ParseAddr(e); err == nil {
		return Peer{Host: a.String(), Port: DefaultPort(domain)}, nil
	}
	if strings.HasPrefix(e, "[") && strings.HasSuffix(e, "]") {
		a, err := netip.ParseAddr(e[1 : len(e)-1])
		if err != nil || !a.Is6() {
			return Peer{}, fmt.Errorf("%w: peer %q: brackets hold no IPv6 address", ErrConfig, e)
		}
		return Peer{Host: a.String(), Port: DefaultPort(domain)}, nil
	}
	host, port := e, DefaultPort(domain)
	if strings.Contains(e, ":") {
		h, ps, err := net.SplitHostPort(e)
		if err != nil {
			return Peer{}, fmt.Errorf("%w: peer %q: %v", ErrConfig, e, err)
		}
		n, err := strconv.Atoi(ps)
		if err != nil || n < 1 || n > 65535 {
			return Peer{}, fmt.Errorf("%w: peer %q: port %q is not a number in 1…65535", ErrConfig, e, ps)
		}
		host, port = h, n
		if strings.HasPrefix(e, "[") {
			if a, err := netip.ParseAddr(h); err != nil || !a.Is6() {
				return Peer{}, fmt.Errorf("%w: peer %q: brackets hold no IPv6 address", ErrConfig, e)
			}
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return Peer{Host: a.String(), Port: port}, nil
	}
	if !validHostName(host) {
		return Peer{}, fmt.Errorf("%w: peer %q: %q is neither a host name nor an IP address", ErrConfig, e, host)
	}
	return Peer{Host: strings.ToLower(host), Port: port}, nil
}

// validHostName accepts DNS names (letters, digits, '-', '_', '.'), which
// catches the typical typos (a stray space, a missing separator, a URL).
func validHostName(h string) bool {
	if h == "" || len(h) > 253 || h[0] == '.' || h[0] == '-' {
		return false
	}
	for _, r := range h {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}

// Config is a daemon's control-plane configuration (see LoadConfig).
type Config struct {
	Listen     string        // listen address, ":<DefaultPort>" by default
	Peers      []Peer        // static peers to dial
	Secret     []byte        // cluster secret (secret or secret-file); nil if neither: the daemon must refuse to run
	SecretFile string        // where Secret came from, if from a file
	Provider   string        // data-path transport, uninterpreted here
	Rails      string        // data-path rails per ring, uninterpreted here
	HostID     string        // empty: the daemon chooses (DefaultHostID)
	Heartbeat  time.Duration // DefaultHeartbeat unless set
	DeadAfter  time.Duration // DefaultDeadAfter unless set
	Extra      map[string]string
	// DDS ("on" or "off"; "" when not set), DDSTopics and DDSLedger are
	// the DDS gateway's settings (rgapsd's -dds, -dds-topics, -dds-ledger),
	// passed through.
	DDS, DDSTopics, DDSLedger string
}

// LoadConfig reads a daemon config file: one `key = value` per line, blank
// lines and lines starting with '#' ignored ('#' elsewhere is part of the
// value, so a secret may contain it). Keys:
//
//	listen       host:port to listen on (default ":" + DefaultPort(domain))
//	peer         one or more peers, as ParsePeers; repeatable
//	peers        the same
//	secret       the cluster secret itself (≥ MinSecret bytes)
//	secret-file  a file holding the secret (trailing newline trimmed); a
//	             relative path is relative to the config file's directory
//	provider     the data-path transport, passed through
//	rails        the data path's connections per ring, passed through
//	host-id      this host's id in the cluster
//	dds          on or off: run the DDS gateway (rgapsd's -dds)
//	dds-topics   the gateway's topic patterns, passed through
//	dds-ledger   the gateway's ledger file, passed through
//	heartbeat    Go duration (default 500ms)
//	dead-after   Go duration (default 3s), longer than heartbeat
//	x-…          anything: kept in Extra for the daemon's own settings
//
// Any other key, a key given twice (but peer/peers), a bad value, both
// secret and secret-file, or a secret readable by group or others (the
// secret file, or the config file itself when it holds `secret`) is
// ErrConfig naming file:line: a typo must not silently fall back to a
// default, and a leaked secret lets anyone on the network join the
// cluster.
func LoadConfig(path string, domain int) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: reading config: %w", ErrConfig, err)
	}
	cfg := Config{Extra: map[string]string{}}
	seenAt := map[string]int{}
	var secretLine int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: %s:%d: %s", ErrConfig, path, line, fmt.Sprintf(format, args...))
		}
		key, value, ok := strings.Cut(text, "=")
		if !ok {
			return Config{}, bad("want `key = value`, got %q", text)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if value == "" {
			return Config{}, bad("%s: empty value", key)
		}
		if key != "peer" && key != "peers" {
			if prev, dup := seenAt[key]; dup {
				return Config{}, bad("%s given again (first at line %d)", key, prev)
			}
			seenAt[key] = line
		}
		switch {
		case key == "listen":
			_, p, err := net.SplitHostPort(value)
			if n, perr := strconv.Atoi(p); err != nil || perr != nil || n < 0 || n > 65535 {
				return Config{}, bad("listen %q: want host:port (host may be empty)", value)
			}
			cfg.Listen = value
		case key == "peer" || key == "peers":
			ps, err := ParsePeers(value, domain)
			if err != nil {
				return Config{}, bad("%s", strings.TrimPrefix(err.Error(), ErrConfig.Error()+": "))
			}
			cfg.Peers = append(cfg.Peers, ps...)
		case key == "secret":
			cfg.Secret = []byte(value)
			secretLine = line
		case key == "secret-file":
			cfg.SecretFile = value
			if !filepath.IsAbs(value) {
				cfg.SecretFile = filepath.Join(filepath.Dir(path), value)
			}
		case key == "provider":
			cfg.Provider = value
		case key == "rails":
			cfg.Rails = value
		case key == "dds":
			if value != "on" && value != "off" {
				return Config{}, bad("dds %q: want on or off", value)
			}
			cfg.DDS = value
		case key == "dds-topics":
			cfg.DDSTopics = value
		case key == "dds-ledger":
			cfg.DDSLedger = value
		case key == "host-id":
			if strings.ContainsAny(value, " \t") || len(value) > maxHostID {
				return Config{}, bad("host-id %q: no spaces, at most %d bytes", value, maxHostID)
			}
			cfg.HostID = value
		case key == "heartbeat" || key == "dead-after":
			d, err := time.ParseDuration(value)
			if err != nil || d <= 0 {
				return Config{}, bad("%s %q: want a positive Go duration such as 500ms", key, value)
			}
			if key == "heartbeat" {
				cfg.Heartbeat = d
			} else {
				cfg.DeadAfter = d
			}
		case strings.HasPrefix(key, "x-") && len(key) > 2:
			cfg.Extra[key] = value
		default:
			return Config{}, bad("unknown key %q", key)
		}
	}
	if err := sc.Err(); err != nil {
		return Config{}, fmt.Errorf("%w: reading %s: %w", ErrConfig, path, err)
	}
	cfg.Peers = dedupPeers(cfg.Peers)
	if cfg.Listen == "" {
		cfg.Listen = ":" + strconv.Itoa(DefaultPort(domain))
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.DeadAfter == 0 {
		cfg.DeadAfter = DefaultDeadAfter
	}
	if cfg.DeadAfter <= cfg.Heartbeat {
		return Config{}, fmt.Errorf("%w: %s: dead-after (%v) must be longer than heartbeat (%v)", ErrConfig, path, cfg.DeadAfter, cfg.Heartbeat)
	}
	switch {
	case secretLine != 0 && cfg.SecretFile != "":
		return Config{}, fmt.Errorf("%w: %s: both secret (line %d) and secret-file (line %d)", ErrConfig, path, secretLine, seenAt["secret-file"])
	case secretLine != 0:
		if err := checkPrivate(path, "config file holding `secret`"); err != nil {
			return Config{}, err
		}
	case cfg.SecretFile != "":
		if err := checkPrivate(cfg.SecretFile, "secret file"); err != nil {
			return Config{}, err
		}
		b, err := os.ReadFile(cfg.SecretFile)
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s:%d: reading secret file: %w", ErrConfig, path, seenAt["secret-file"], err)
		}
		b = bytes.TrimSuffix(b, []byte("\n"))
		b = bytes.TrimSuffix(b, []byte("\r"))
		cfg.Secret = b
	}
	if cfg.Secret != nil && len(cfg.Secret) < MinSecret {
		return Config{}, fmt.Errorf("%w: %s: cluster secret of %d bytes, need at least %d", ErrConfig, path, len(cfg.Secret), MinSecret)
	}
	return cfg, nil
}

// checkPrivate refuses a file that group or others may read or write.
func checkPrivate(path, what string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrConfig, what, err)
	}
	if m := st.Mode().Perm(); m&0o077 != 0 {
		return fmt.Errorf("%w: %s %s has mode %04o: group or others could read the cluster secret and join the cluster; chmod 600 it", ErrConfig, what, path, m)
	}
	return nil
}

func dedupPeers(ps []Peer) []Peer {
	seen := map[Peer]bool{}
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// DefaultHostID is /etc/machine-id, or the host name where that is
// missing. Containers sharing a machine id need host-id set explicitly.
func DefaultHostID() (string, error) {
	if b, err := os.ReadFile("/etc/machine-id"); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	}
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("choosing a host id: %w", err)
	}
	return h, nil
}
