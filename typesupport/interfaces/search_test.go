package interfaces

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/msgparse"
)

func writeDef(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSearchPath(t *testing.T) {
	env := map[string]string{PathEnv: "/a::/b", "AMENT_PREFIX_PATH": "/opt/ros/jazzy:/ws/install/pkg"}
	got := SearchPath(func(k string) string { return env[k] })
	want := []string{"/a", "/b", "/opt/ros/jazzy/share", "/ws/install/pkg/share"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SearchPath = %v, want %v", got, want)
	}
	if got := SearchPath(func(string) string { return "" }); len(got) != 0 {
		t.Errorf("empty environment: %v", got)
	}
}

func TestSearch(t *testing.T) {
	own, prefix := t.TempDir(), t.TempDir()
	// a package of one's own, nesting an embedded type and one of an
	// installation's
	writeDef(t, filepath.Join(own, "my_msgs", "msg", "Reading.msg"), "std_msgs/Header header\nmy_msgs/Unit unit\nfloat64[] values\n")
	writeDef(t, filepath.Join(prefix, "share", "my_msgs", "msg", "Unit.msg"), "string name\n")
	// an installed definition wins over the embedded one
	writeDef(t, filepath.Join(prefix, "share", "std_msgs", "msg", "Int32.msg"), "int32 data\nint32 extra\n")
	writeDef(t, filepath.Join(own, "my_srvs", "srv", "Ask.srv"), "string q\n---\nstring a\n")
	r := Search([]string{own, filepath.Join(prefix, "share")})

	m, err := r.Message("my_msgs/msg/Reading")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Fields) != 3 || m.Fields[0].Message.FullName() != "std_msgs/msg/Header" || m.Fields[1].Message.Fields[0].Name != "name" {
		t.Errorf("Reading: %+v", m.Fields)
	}
	if m, err := r.Message("std_msgs/Int32"); err != nil || len(m.Fields) != 2 {
		t.Errorf("installed std_msgs/Int32: %v, %v", m, err)
	}
	if m, err := r.Message("geometry_msgs/msg/Twist"); err != nil || len(m.Fields) != 2 {
		t.Errorf("embedded Twist: %v, %v", m, err)
	}
	if s, err := r.Service("my_srvs/srv/Ask"); err != nil || s.Response.Fields[0].Name != "a" {
		t.Errorf("Ask: %v, %v", s, err)
	}
	if _, err := r.Message("my_msgs/msg/Nope"); !errors.Is(err, msgparse.ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	// a definition that does not parse is an error, not an unknown type
	writeDef(t, filepath.Join(own, "my_msgs", "msg", "Broken.msg"), "int32 x y z\n")
	if _, err := r.Message("my_msgs/Broken"); err == nil || errors.Is(err, msgparse.ErrUnknownType) {
		t.Errorf("broken definition: %v", err)
	}
	// without a search path, only the embedded definitions
	if _, err := Search(nil).Message("my_msgs/msg/Reading"); !errors.Is(err, msgparse.ErrUnknownType) {
		t.Errorf("no path: %v", err)
	}
	if m, err := Search(nil).Message("sensor_msgs/msg/Image"); err != nil || m.Fields[len(m.Fields)-1].Name != "data" {
		t.Errorf("no path, Image: %v", err)
	}
}
