// Package gpupool is the owner of shared GPU pools on a host: the part of
// rgapsd that allocates a topic's device memory, keeps it alive as long as
// the topic exists, and hands it to participant processes, and the client
// participants use to ask for it.
//
// Device memory must outlive any one participant, so one process per host
// and domain (the daemon, `rgaps daemon`) owns it. A participant connects to
// the daemon's Unix socket (abstract namespace, SOCK_SEQPACKET), the daemon
// checks its peer credentials (SO_PEERCRED: same user, or root), allocates
// the pool with CUDA's virtual memory management and sends it as a POSIX
// file descriptor (SCM_RIGHTS); where the device cannot export descriptors
// it sends a legacy CUDA IPC handle instead. Which one is decided at run
// time from the device's attributes.
//
// The package owns the protocol (version 1, JSON requests and replies of at
// most MaxMessage bytes, descriptors in ancillary data) and the daemon's
// pool table. It does not know the topic format: a pool is named by the
// topic's shared-memory segment, and the daemon frees a pool once that
// segment is gone.
package gpupool
