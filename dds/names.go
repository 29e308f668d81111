package dds

import (
	"fmt"
	"strings"
)

// ROS 2's DDS rmws (rmw_cyclonedds_cpp, rmw_fastrtps_cpp) name a ROS topic
// "/a/b" rt/a/b on DDS, a service "/s" rq/sRequest (requests) and
// rr/sReply (replies), and a type "pkg/msg/T" pkg::msg::dds_::T_.
const (
	prefixTopic   = "rt"
	prefixRequest = "rq"
	prefixReply   = "rr"
	suffixRequest = "Request"
	suffixReply   = "Reply"
)

// Kind says what a DDS topic carries for ROS.
type Kind uint8

// Kinds of DDS topics.
const (
	KindOther   Kind = iota // not a ROS name (or one made with avoid_ros_namespace_conventions)
	KindTopic               // rt/: a ROS topic
	KindRequest             // rq/...Request: a service's requests
	KindReply               // rr/...Reply: a service's replies
)

// TopicName is the DDS name of the absolute ROS topic name rosTopic.
func TopicName(rosTopic string) (string, error) {
	if err := checkAbsolute(rosTopic); err != nil {
		return "", err
	}
	return prefixTopic + rosTopic, nil
}

// ServiceTopicNames are the DDS names of the request and reply topics of
// the absolute ROS service name.
func ServiceTopicNames(service string) (request, reply string, err error) {
	if err := checkAbsolute(service); err != nil {
		return "", "", err
	}
	return prefixRequest + service + suffixRequest, prefixReply + service + suffixReply, nil
}

func checkAbsolute(name string) error {
	if len(name) < 2 || name[0] != '/' || strings.HasSuffix(name, "/") {
		return fmt.Errorf("dds: %q is not an absolute ROS name", name)
	}
	return nil
}

// ROSName is the ROS topic or service name a DDS topic name stands for,
// and its kind; KindOther and the name unchanged when it follows none of
// the conventions.
func ROSName(ddsTopic string) (string, Kind) {
	try := func(prefix, suffix string) (string, bool) {
		rest, ok := strings.CutPrefix(ddsTopic, prefix+"/")
		if !ok {
			return "", false
		}
		rest, ok = strings.CutSuffix(rest, suffix)
		if !ok || rest == "" {
			return "", false
		}
		return "/" + rest, true
	}
	if n, ok := try(prefixTopic, ""); ok {
		return n, KindTopic
	}
	if n, ok := try(prefixRequest, suffixRequest); ok {
		return n, KindRequest
	}
	if n, ok := try(prefixReply, suffixReply); ok {
		return n, KindReply
	}
	return ddsTopic, KindOther
}

// TypeName is the DDS type name of the ROS type rosType
// ("std_msgs/msg/String" is std_msgs::msg::dds_::String_).
func TypeName(rosType string) (string, error) {
	parts := strings.Split(rosType, "/")
	if len(parts) < 2 {
		return "", fmt.Errorf("dds: %q is not a ROS type name (pkg/msg/Type)", rosType)
	}
	for _, p := range parts {
		if p == "" || strings.Contains(p, ":") {
			return "", fmt.Errorf("dds: %q is not a ROS type name (pkg/msg/Type)", rosType)
		}
	}
	last := len(parts) - 1
	return strings.Join(parts[:last], "::") + "::dds_::" + parts[last] + "_", nil
}

// ROSTypeName is the ROS type name of a DDS type name made by TypeName;
// false for any other name.
func ROSTypeName(ddsType string) (string, bool) {
	ns, name, ok := strings.Cut(ddsType, "::dds_::")
	if !ok || ns == "" || len(name) < 2 || !strings.HasSuffix(name, "_") || strings.Contains(name, "::") {
		return "", false
	}
	return strings.ReplaceAll(ns, "::", "/") + "/" + strings.TrimSuffix(name, "_"), true
}
