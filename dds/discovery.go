//go:build cgo && !nodds

package dds

/*
#include "rgdds.h"
*/
import "C"

import (
	"unsafe"
)

// Endpoints lists the writers and readers the participant's domain knows
// now, through the built-in DCPSPublication and DCPSSubscription topics:
// remote ones as discovery found them, and this process's own. Each kind
// lists at most 4096. The built-in readers are made on the first call;
// Cyclone fills them with what is known already.
func (p *Participant) Endpoints() ([]Endpoint, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	var out []Endpoint
	for i, writer := range []bool{false, true} {
		if p.builtin[i] == 0 {
			pub := C.int32_t(0)
			if writer {
				pub = 1
			}
			r := C.rgd_builtin_reader(p.handle, pub)
			if err := check("create built-in reader", r); err != nil {
				return nil, err
			}
			p.builtin[i] = r
		}
		eps, err := readEndpoints(p.builtin[i], writer)
		if err != nil {
			return nil, err
		}
		out = append(out, eps...)
	}
	return out, nil
}

// readEndpoints reads the alive samples of a built-in endpoint reader.
func readEndpoints(r C.int32_t, writer bool) ([]Endpoint, error) {
	var n C.int32_t
	b := C.rgd_batch_read(r, &n)
	if b == nil {
		return nil, check("read built-in topic", min(n, -1))
	}
	defer C.rgd_batch_free(b)
	eps := make([]Endpoint, 0, int(n))
	for i := C.int32_t(0); i < n; i++ {
		var e C.struct_rgd_ep
		C.rgd_batch_at(b, i, &e)
		if e.valid == 0 {
			continue
		}
		ep := Endpoint{
			Writer:   writer,
			Topic:    C.GoString(e.topic),
			Type:     C.GoString(e._type),
			QoS:      profileOf(&e.qos),
			UserData: takeUserData(e.ud, e.udlen),
		}
		copy(ep.GUID[:], C.GoBytes(unsafe.Pointer(&e.guid[0]), 16))
		copy(ep.Participant[:], C.GoBytes(unsafe.Pointer(&e.ppguid[0]), 16))
		eps = append(eps, ep)
	}
	return eps, nil
}
