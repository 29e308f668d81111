//go:build cgo && !nofabric

package fabric

/*
#cgo pkg-config: libfabric
#include "rgfabric.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Constants libfabric defines as macros or with casts cgo cannot evaluate.
var (
	addrUnspec   = C.rg_addr_unspec()
	addrNotAvail = C.rg_addr_notavail()
	keyNotAvail  = uint64(C.rg_key_notavail())
)

const (
	fiEAGAIN      = C.FI_EAGAIN
	fiEAVAIL      = C.FI_EAVAIL
	fiECANCELED   = C.FI_ECANCELED
	ctxSize       = C.sizeof_struct_fi_context2
	entSize       = C.sizeof_struct_fi_cq_data_entry
	flagRemoteCQ  = uint64(C.FI_REMOTE_CQ_DATA)
	flagRecv      = uint64(C.FI_RECV)
	flagDelivery  = uint64(C.FI_DELIVERY_COMPLETE)
	modeRxCQData  = uint64(C.FI_RX_CQ_DATA)
	mrLocal       = uint64(C.FI_MR_LOCAL)
	mrVirtAddr    = uint64(C.FI_MR_VIRT_ADDR)
	mrProvKey     = uint64(C.FI_MR_PROV_KEY)
	orderWAW      = uint64(C.FI_ORDER_WAW)
	accessData    = uint64(C.FI_WRITE | C.FI_REMOTE_WRITE | C.FI_READ | C.FI_REMOTE_READ)
	accessCtl     = uint64(C.FI_SEND | C.FI_RECV)
	evConnReq     = C.FI_CONNREQ
	evConnected   = C.FI_CONNECTED
	evShutdown    = C.FI_SHUTDOWN
	epMsg         = C.FI_EP_MSG
	epRdm         = C.FI_EP_RDM
	fmtSockaddrIn = C.FI_SOCKADDR_IN
	fmtSockIn6    = C.FI_SOCKADDR_IN6
	fmtAddrStr    = C.FI_ADDR_STR
)

func fiStrerror(code int) string {
	return C.GoString(C.fi_strerror(C.int(code)))
}

// cstr is a NUL-terminated C copy of s; free with C.free.
func cstr(s string) *C.char { return C.CString(s) }

func cfree(p unsafe.Pointer) { C.free(p) }

func ptr(s *C.char) unsafe.Pointer { return unsafe.Pointer(s) }

func errAddr(c *core, addr string) error {
	return fmt.Errorf("libfabric %s: fi_av_insert: address %q not accepted", c.p.name, addr)
}
