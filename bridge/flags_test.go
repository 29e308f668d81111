package bridge

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// Rails come from -rails, else the config file's rails, else auto (0,
// resolved by New from the provider and the cores); bad values are
// refused with ErrConfig.
func TestRailsFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bridge.conf")
	if err := os.WriteFile(cfg, []byte("secret = 0123456789abcdef-test\nrails = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) (int, error) {
		fs := flag.NewFlagSet("rgapsd", flag.ContinueOnError)
		f := BindFlags(fs, zerocopy.Config{})
		if err := fs.Parse(append([]string{"-peers", "127.0.0.1", "-host-id", "h"}, args...)); err != nil {
			return 0, err
		}
		d, err := f.Options(func(string) (int, error) { return 0, nil })
		if err != nil {
			return 0, err
		}
		return d.Bridge.Rails, nil
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 0},
		{[]string{"-rails", "auto"}, 0},
		{[]string{"-rails", "5"}, 5},
		{[]string{"-config", cfg}, 3},
		{[]string{"-config", cfg, "-rails", "1"}, 1},
	} {
		if got, err := parse(c.args...); err != nil || got != c.want {
			t.Errorf("%q: rails %d, %v; want %d", c.args, got, err, c.want)
		}
	}
	for _, bad := range []string{"0x", "-1", "17"} {
		if _, err := parse("-rails", bad); !errors.Is(err, ErrConfig) {
			t.Errorf("-rails %s: %v", bad, err)
		}
	}
	if got := AutoRails("fabric:tcp", ring.WriteImm, 16); got != 4 {
		t.Errorf("auto on 16 cores: %d", got)
	}
	for _, c := range []struct {
		prov  string
		mode  ring.Mode
		cores int
		want  int
	}{{"fabric:tcp", ring.WriteImm, 2, 1}, {"tcp", ring.WriteImm, 8, 2}, {"fabric:tcp", ring.WriteImm, 64, 4},
		{"fabric:shm", ring.WriteImm, 16, 4}, {"fabric:shm", ring.WriteImm, 2, 1}, {"fabric:verbs", ring.WriteImm, 16, 1},
		{"fabric:tcp", ring.WriteTwice, 16, 1}} {
		if got := AutoRails(c.prov, c.mode, c.cores); got != c.want {
			t.Errorf("AutoRails(%s, %v, %d) = %d, want %d", c.prov, c.mode, c.cores, got, c.want)
		}
	}
	// More than one rail needs write-imm: New refuses the mix.
	_, err := New(Options{Rails: 2, Mode: ring.WriteTwice})
	if !errors.Is(err, ErrConfig) {
		t.Errorf("2 rails in write-twice mode: %v", err)
	}
}
