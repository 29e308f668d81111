// Package fabric implements bridge/transport over libfabric, through cgo
// linked with -lfabric: the tcp provider with connected FI_EP_MSG
// endpoints (a passive endpoint and event queue; FI_CONNREQ, accept,
// connect), the shm provider with FI_EP_RDM endpoints on one host (a small
// hello/welcome exchange in-band, then fi_av_insert of the peer's
// fi_getname), and verbs where present (FI_EP_MSG, like tcp).
//
// Writes are fi_writedata with 8 bytes of remote CQ data (WriteImm) or
// fi_write (Write); the receiver reads FI_REMOTE_CQ_DATA completions from
// the completion queue bound with FI_TRANSMIT|FI_RECV (format
// FI_CQ_FORMAT_DATA). The paths verbs needs and software providers do not
// are always compiled and can be forced (Options.Force*): pre-posted
// receives that remote CQ data consumes (FI_RX_CQ_DATA; each is posted
// again when its completion comes back), MR descriptors for every local
// buffer (FI_MR_LOCAL), provider-chosen keys (FI_MR_PROV_KEY: fi_mr_key
// is always used), virtual or offset addressing (FI_MR_VIRT_ADDR), and a
// fence (FI_DELIVERY_COMPLETE Writes awaited before the next WriteImm) for
// providers without write-after-write ordering, shm among them.
//
// # Closing
//
// An endpoint says bye (a control message) when it closes, so an RDM
// peer, which has no connection to lose, learns it (ErrPeerClosed), and
// waits up to 2 s for the peer's bye-ack, which the peer sends, from its
// progress, once its own operations completed. This matters for shm
// endpoints of one process: libfabric 1.17 shm reaches such a peer
// through a pointer to its region, so touching it after it closed
// crashes. The package therefore tracks its shm endpoints
// (inproc.go): a closing endpoint removes itself from the address
// vectors of this process's endpoints while it is still alive, later
// posts to it fail with ErrPeerClosed, and one whose ack did not come
// keeps its memory until its peer closes too. Peers in other processes
// map shm files that outlive the owner's unlink; none of this applies.
//
// # Provider behaviour measured with libfabric 1.17 (Debian 12)
//
//   - tcp never returns -FI_EAGAIN for a full transmit queue: its transfer
//     pool grows without bound (more than 4096 writes were accepted for a
//     peer that did not poll). The endpoint therefore bounds itself: one
//     operation context per advertised tx_size (256), and a full queue is
//     retried while polling, up to Options.Timeout.
//   - tcp's fi_connect needs the peer address passed explicitly; NULL (with
//     info->dest_addr set) returns -FI_EINVAL.
//   - A write with a bad key: tcp drops the connection (the writer sees
//     FI_SHUTDOWN); shm drops the write with no completion on either side.
//   - shm reaches a peer of the same process through a pointer into that
//     peer's memory, so an endpoint that closes first must be removed from
//     its peers' address vectors while it lives (see above); names are
//     never reused within a process.
//   - fi_cq_strerror says "Success" for provider error 0: its text is added
//     only for a non-zero provider error.
//
// # Locks
//
// Order: an Endpoint's (or listener's) mutex, then shmPeers (read-held
// around C calls of endpoints with a peer in this process, write-held to
// register, remove or destroy one), then Provider.landMu (read-held while
// progressing, write-held by Region.Close), then Provider.mu. All C calls on an
// endpoint hold its mutex; waits release it between attempts.
//
// This package is one of the owners of unsafe and import "C": it turns
// registered Go-visible memory into C addresses, and keeps operation
// contexts, completion entries and control buffers in C memory (libfabric
// holds on to them after a call returns). It must not know the ring
// protocol. Built without cgo, or with the nofabric tag, Open returns
// transport.ErrNotSupported.
package fabric
