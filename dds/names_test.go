package dds

import "testing"

func TestNames(t *testing.T) {
	if n, err := TopicName("/chatter"); err != nil || n != "rt/chatter" {
		t.Errorf("TopicName(/chatter) = %q, %v", n, err)
	}
	if _, err := TopicName("chatter"); err == nil {
		t.Error("TopicName accepted a relative name")
	}
	rq, rr, err := ServiceTopicNames("/ns/add")
	if err != nil || rq != "rq/ns/addRequest" || rr != "rr/ns/addReply" {
		t.Errorf("ServiceTopicNames = %q, %q, %v", rq, rr, err)
	}
	for _, c := range []struct {
		dds  string
		ros  string
		kind Kind
	}{
		{"rt/chatter", "/chatter", KindTopic},
		{"rq/ns/addRequest", "/ns/add", KindRequest},
		{"rr/ns/addReply", "/ns/add", KindReply},
		{"DCPSParticipant", "DCPSParticipant", KindOther},
		{"rq/x", "rq/x", KindOther},
	} {
		if n, k := ROSName(c.dds); n != c.ros || k != c.kind {
			t.Errorf("ROSName(%q) = %q, %v; want %q, %v", c.dds, n, k, c.ros, c.kind)
		}
	}
	for ros, dds := range map[string]string{
		"std_msgs/msg/String":                       "std_msgs::msg::dds_::String_",
		"example_interfaces/srv/AddTwoInts_Request": "example_interfaces::srv::dds_::AddTwoInts_Request_",
	} {
		if got, err := TypeName(ros); err != nil || got != dds {
			t.Errorf("TypeName(%q) = %q, %v", ros, got, err)
		}
		if back, ok := ROSTypeName(dds); !ok || back != ros {
			t.Errorf("ROSTypeName(%q) = %q, %v", dds, back, ok)
		}
	}
	for _, bad := range []string{"String", "std_msgs//String", "a::b/c"} {
		if _, err := TypeName(bad); err == nil {
			t.Errorf("TypeName(%q) accepted", bad)
		}
	}
	if _, ok := ROSTypeName("dds_::String_"); ok {
		t.Error("ROSTypeName accepted a name without namespace")
	}
}
