package schema_test

import (
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

func imageValue(b *testing.B, n int) (*schema.Message, *schema.Struct) {
	m := msg(b, "sensor_msgs/msg/Image")
	v := schema.New(m)
	set(b, v, "header.frame_id", "camera")
	set(b, v, "encoding", "rgb8")
	set(b, v, "data", make([]uint8, n))
	return m, v
}

func BenchmarkEncodeImage1MiB(b *testing.B) {
	m, v := imageValue(b, 1<<20)
	b.SetBytes(1 << 20)
	for b.Loop() {
		if _, err := schema.Encode(m, v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeImage1MiB(b *testing.B) {
	m, v := imageValue(b, 1<<20)
	data, _ := schema.Encode(m, v)
	b.SetBytes(1 << 20)
	for b.Loop() {
		if _, err := schema.Decode(m, data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRoundTripAllTypes(b *testing.B) {
	m := msg(b, "test_msgs/AllTypes")
	v := schema.New(m)
	for b.Loop() {
		data, err := schema.Encode(m, v)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := schema.Decode(m, data); err != nil {
			b.Fatal(err)
		}
	}
}
