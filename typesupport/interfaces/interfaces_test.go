package interfaces

import (
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

func TestAllDefinitionsParse(t *testing.T) {
	r := Registry()
	msgs := r.Messages()
	if len(msgs) < 30 {
		t.Fatalf("only %d messages: %v", len(msgs), msgs)
	}
	for _, name := range msgs {
		m, err := r.Message(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := m.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if m.FullName() != name {
			t.Errorf("%s named %s", name, m.FullName())
		}
	}
	srvs := r.Services()
	if len(srvs) != 4 {
		t.Fatalf("services %v", srvs)
	}
	for _, name := range srvs {
		s, err := r.Service(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := s.Request.Validate(); err != nil {
			t.Error(err)
		}
		if err := s.Response.Validate(); err != nil {
			t.Error(err)
		}
	}
}

// TestFieldLists pins the field order and types of the definitions the
// codec tests rely on (the ROS 2 documentation's field lists).
func TestFieldLists(t *testing.T) {
	r := Registry()
	for name, want := range map[string]string{
		"builtin_interfaces/msg/Time":  "int32 sec; uint32 nanosec",
		"std_msgs/msg/String":          "string data",
		"std_msgs/msg/Header":          "builtin_interfaces/Time stamp; string frame_id",
		"std_msgs/msg/Empty":           "uint8 structure_needs_at_least_one_member",
		"geometry_msgs/msg/Point":      "float64 x; float64 y; float64 z",
		"geometry_msgs/msg/Quaternion": "float64 x; float64 y; float64 z; float64 w",
		"geometry_msgs/msg/Pose":       "geometry_msgs/Point position; geometry_msgs/Quaternion orientation",
		"sensor_msgs/msg/Image": "std_msgs/Header header; uint32 height; uint32 width; string encoding; " +
			"uint8 is_bigendian; uint32 step; uint8[] data",
		"sensor_msgs/msg/CameraInfo": "std_msgs/Header header; uint32 height; uint32 width; string distortion_model; " +
			"float64[] d; float64[9] k; float64[9] r; float64[12] p; uint32 binning_x; uint32 binning_y; sensor_msgs/RegionOfInterest roi",
		"sensor_msgs/msg/PointCloud2": "std_msgs/Header header; uint32 height; uint32 width; sensor_msgs/PointField[] fields; " +
			"bool is_bigendian; uint32 point_step; uint32 row_step; uint8[] data; bool is_dense",
	} {
		m, err := r.Message(name)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for i, f := range m.Fields {
			if i > 0 {
				got += "; "
			}
			got += f.TypeString() + " " + f.Name
		}
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	q, _ := r.Message("geometry_msgs/msg/Quaternion")
	if q.Fields[3].Default != float64(1) {
		t.Errorf("Quaternion.w default %v", q.Fields[3].Default)
	}
	pf, _ := r.Message("sensor_msgs/msg/PointField")
	if c, ok := pf.Constant("FLOAT64"); !ok || c.Value != uint8(8) || len(pf.Constants) != 8 {
		t.Errorf("PointField constants %+v", pf.Constants)
	}
	if pf.Fields[2].Type != schema.TypeUint8 {
		t.Error("datatype")
	}
}
