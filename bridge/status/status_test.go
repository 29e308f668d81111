package status

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeVersion(t *testing.T) {
	data, err := json.Marshal(Status{Version: Version, Host: "h1", Peers: []PeerStatus{{Host: "h2", Up: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"version":1`) {
		t.Errorf("no version field in %s", data)
	}
	st, err := Decode(data)
	if err != nil || st.Host != "h1" || len(st.Peers) != 1 || !st.Peers[0].Up {
		t.Fatalf("Decode: %+v, %v", st, err)
	}
	for _, bad := range []string{
		`{"host":"old daemon","peers":[]}`,       // before the field: version 0
		`{"version":2,"host":"x","peers":"new"}`, // a later version whose fields changed type
	} {
		_, err := Decode([]byte(bad))
		if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "this program reads version 1") {
			t.Errorf("Decode(%s): %v, want ErrVersion naming both versions", bad, err)
		}
	}
	if _, err := Decode([]byte(`{"version":`)); err == nil || errors.Is(err, ErrVersion) {
		t.Errorf("truncated answer: %v", err)
	}
}
