//go:build cgo && !nodds

package dds

/*
#include "rgdds.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Topic is a DDS topic of raw serialized samples: any type, by name, with
// no generated code (see the package doc). It lives as long as its
// participant.
type Topic struct {
	p      *Participant
	handle C.int32_t
	name   string // DDS topic name
	typ    string // DDS type name
}

// Topic is the raw topic for the absolute ROS topic name rosTopic of ROS
// type rosType ("std_msgs/msg/String"), named as ROS 2's DDS rmws name it
// (rt/chatter, std_msgs::msg::dds_::String_).
func (p *Participant) Topic(rosTopic, rosType string) (*Topic, error) {
	name, err := TopicName(rosTopic)
	if err != nil {
		return nil, err
	}
	typ, err := TypeName(rosType)
	if err != nil {
		return nil, err
	}
	return p.RawTopic(name, typ)
}

// RawTopic is the raw topic of DDS name name and DDS type name typ, as
// they are (service topics, or names made with
// avoid_ros_namespace_conventions). A participant has one Topic per name;
// asking again returns it, asking with another type is an error.
func (p *Participant) RawTopic(name, typ string) (*Topic, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if t := p.topics[name]; t != nil {
		if t.typ != typ {
			return nil, fmt.Errorf("dds: topic %s has type %s here, not %s", name, t.typ, typ)
		}
		return t, nil
	}
	cn, ct := C.CString(name), C.CString(typ)
	defer C.free(unsafe.Pointer(cn))
	defer C.free(unsafe.Pointer(ct))
	h := C.rgd_create_raw_topic(p.handle, cn, ct)
	if err := check(fmt.Sprintf("create topic %s (%s)", name, typ), h); err != nil {
		return nil, err
	}
	t := &Topic{p: p, handle: h, name: name, typ: typ}
	p.topics[name] = t
	return t, nil
}

// Name is the DDS topic name.
func (t *Topic) Name() string { return t.name }

// TypeName is the DDS type name.
func (t *Topic) TypeName() string { return t.typ }
