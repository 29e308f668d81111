package control

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaultPortAndPeerString(t *testing.T) {
	if DefaultPort(0) != 7700 || DefaultPort(42) != 7742 {
		t.Error(DefaultPort(0), DefaultPort(42))
	}
	for p, want := range map[Peer]string{
		{"node-a", 7700}: "node-a:7700",
		{"10.0.0.1", 1}:  "10.0.0.1:1",
		{"fd00::1", 80}:  "[fd00::1]:80",
	} {
		if p.String() != want {
			t.Errorf("%#v: %q, want %q", p, p.String(), want)
		}
	}
}

func TestParsePeers(t *testing.T) {
	const d = 3 // default port 7703
	cases := []struct {
		in   string
		want []Peer
		bad  string // non-empty: ErrConfig naming this
	}{
		{"", nil, ""},
		{" ; ;, ", nil, ""},
		{"node-a", []Peer{{"node-a", 7703}}, ""},
		{"node-a:9000", []Peer{{"node-a", 9000}}, ""},
		{" a ; b:1 , c ", []Peer{{"a", 7703}, {"b", 1}, {"c", 7703}}, ""},
		{"10.0.0.1;10.0.0.1:7703;10.0.0.1:7704", []Peer{{"10.0.0.1", 7703}, {"10.0.0.1", 7704}}, ""},
		{"[fd00::1]:7000", []Peer{{"fd00::1", 7000}}, ""},
		{"[fd00::1]", []Peer{{"fd00::1", 7703}}, ""},
		{"fd00::1", []Peer{{"fd00::1", 7703}}, ""},
		{"fd00:0::1;[fd00::1]:7703", []Peer{{"fd00::1", 7703}}, ""},
		{"fe80::1%eth0", []Peer{{"fe80::1%eth0", 7703}}, ""},
		{"Node-A;node-a", []Peer{{"node-a", 7703}}, ""},
		{"a:65535", []Peer{{"a", 65535}}, ""},
		{"a:0", nil, `"a:0"`},
		{"a:65536", nil, `"a:65536"`},
		{"a:http", nil, `"a:http"`},
		{"a:-1", nil, `"a:-1"`},
		{"good;a:", nil, `"a:"`},
		{":7700", nil, `":7700"`},
		{"a b", nil, `"a b"`},
		{"http://a", nil, `"http://a"`},
		{"[node-a]:1", nil, `"[node-a]:1"`},
		{"[10.0.0.1]", nil, `"[10.0.0.1]"`},
		{"a:1:2", nil, `"a:1:2"`},
	}
	for _, tc := range cases {
		got, err := ParsePeers(tc.in, d)
		if tc.bad != "" {
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%q: got %v, %v; want ErrConfig naming %s", tc.in, got, err, tc.bad)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// writeFile writes a file with the given mode (exactly, whatever the umask).
func writeFile(t *testing.T, dir, name, text string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ok.secret", "secret-from-a-file-0123\n", 0o600)
	writeFile(t, dir, "crlf.secret", "secret-from-a-file-0123\r\n", 0o400)
	writeFile(t, dir, "open.secret", "secret-from-a-file-0123\n", 0o640)
	writeFile(t, dir, "world.secret", "secret-from-a-file-0123\n", 0o604)
	writeFile(t, dir, "short.secret", "short\n", 0o600)

	full := `# a full config
listen = 0.0.0.0:7800

peer = node-b; node-c:7710
peer=[fd00::3]:7700
peers = node-b , node-d
secret-file = ok.secret
provider = tcp
rails = 3
host-id = node-a
heartbeat = 250ms
dead-after = 2s
x-ring-size = 64MiB
dds = on
dds-topics = /cam/*,/chatter
dds-ledger = /var/lib/rgaps/ledger
`
	wantFull := Config{
		Listen:     "0.0.0.0:7800",
		Peers:      []Peer{{"node-b", 7705}, {"node-c", 7710}, {"fd00::3", 7700}, {"node-d", 7705}},
		Secret:     []byte("secret-from-a-file-0123"),
		SecretFile: filepath.Join(dir, "ok.secret"),
		Provider:   "tcp",
		Rails:      "3",
		HostID:     "node-a",
		Heartbeat:  250 * time.Millisecond,
		DeadAfter:  2 * time.Second,
		Extra:      map[string]string{"x-ring-size": "64MiB"},
		DDS:        "on",
		DDSTopics:  "/cam/*,/chatter",
		DDSLedger:  "/var/lib/rgaps/ledger",
	}
	minimal := Config{Listen: ":7705", Heartbeat: DefaultHeartbeat, DeadAfter: DefaultDeadAfter, Extra: map[string]string{}}

	cases := []struct {
		name string
		text string
		mode os.FileMode
		want *Config
		bad  string // non-empty: ErrConfig containing this
	}{
		{"full", full, 0o644, &wantFull, ""},
		{"empty file: defaults", "\n# nothing\n", 0o644, &minimal, ""},
		{"inline secret in a private file", "secret = inline-secret-0123456789 # kept\n", 0o600,
			&Config{Listen: ":7705", Secret: []byte("inline-secret-0123456789 # kept"), Heartbeat: DefaultHeartbeat, DeadAfter: DefaultDeadAfter, Extra: map[string]string{}}, ""},
		{"crlf secret file", "secret-file = crlf.secret\n", 0o644,
			&Config{Listen: ":7705", Secret: []byte("secret-from-a-file-0123"), SecretFile: filepath.Join(dir, "crlf.secret"), Heartbeat: DefaultHeartbeat, DeadAfter: DefaultDeadAfter, Extra: map[string]string{}}, ""},
		{"unknown key", "listen = :1\nheartbaet = 1s\n", 0o644, nil, "cfg:2: unknown key \"heartbaet\""},
		{"no equals", "listen :1\n", 0o644, nil, "cfg:1: want `key = value`"},
		{"empty value", "provider =\n", 0o644, nil, "cfg:1: provider: empty value"},
		{"duplicate key", "provider = a\n\nprovider = b\n", 0o644, nil, "cfg:3: provider given again (first at line 1)"},
		{"bad duration", "heartbeat = 5\n", 0o644, nil, "cfg:1: heartbeat \"5\""},
		{"negative duration", "dead-after = -1s\n", 0o644, nil, "cfg:1: dead-after"},
		{"dead-after not after heartbeat", "heartbeat = 1s\ndead-after = 1s\n", 0o644, nil, "dead-after (1s) must be longer"},
		{"bad listen", "listen = 7700\n", 0o644, nil, "cfg:1: listen \"7700\""},
		{"bad peer", "peer = a;b:x\n", 0o644, nil, "cfg:1: peer \"b:x\""},
		{"bad host id", "host-id = a b\n", 0o644, nil, "cfg:1: host-id"},
		{"both secrets", "secret = inline-secret-0123456789\nsecret-file = ok.secret\n", 0o600, nil, "both secret (line 1) and secret-file (line 2)"},
		{"group-readable secret file", "secret-file = open.secret\n", 0o644, nil, "mode 0640: group or others could read"},
		{"world-readable secret file", "secret-file = world.secret\n", 0o644, nil, "mode 0604"},
		{"inline secret in a readable file", "secret = inline-secret-0123456789\n", 0o644, nil, "config file holding `secret`"},
		{"missing secret file", "secret-file = nope.secret\n", 0o644, nil, "no such file"},
		{"short secret", "secret-file = short.secret\n", 0o644, nil, "secret of 5 bytes"},
		{"x- alone", "x- = 1\n", 0o644, nil, "unknown key"},
		{"bad dds", "dds = yes\n", 0o644, nil, "cfg:1: dds \"yes\": want on or off"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "cfg", tc.text, tc.mode)
			got, err := LoadConfig(p, 5)
			if tc.bad != "" {
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("got %v; want ErrConfig containing %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, *tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, *tc.want)
			}
		})
	}
	if _, err := LoadConfig(filepath.Join(dir, "absent"), 0); !errors.Is(err, ErrConfig) {
		t.Errorf("missing file: %v", err)
	}
}

func TestDefaultHostID(t *testing.T) {
	id, err := DefaultHostID()
	if err != nil || id == "" {
		t.Fatalf("%q, %v", id, err)
	}
}

// TestDocExample: the example in doc.go loads as shown.
func TestDocExample(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(src), "See LoadConfig. Example:\n//\n")
	example, _, _ := strings.Cut(after, "//\n")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(example), "\n") {
		lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(l, "//"), "\t"))
	}
	dir := t.TempDir()
	writeFile(t, dir, "cluster.secret", "a-cluster-secret-of-32-bytes-xx\n", 0o600)
	p := writeFile(t, dir, "control.conf", strings.Join(lines, "\n")+"\n", 0o644)
	cfg, err := LoadConfig(p, 0)
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(lines, "\n"))
	}
	want := []Peer{{"node-b", 7700}, {"node-c", 7710}, {"fd00::3", 7700}}
	if cfg.Listen != ":7700" || !reflect.DeepEqual(cfg.Peers, want) || cfg.HostID != "node-a" || string(cfg.Secret) != "a-cluster-secret-of-32-bytes-xx" {
		t.Errorf("%+v", cfg)
	}
}
