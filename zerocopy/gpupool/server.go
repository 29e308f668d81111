package gpupool

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
)

// ServerConfig configures the pool owner.
type ServerConfig struct {
	Prefix string // shared-memory prefix (as zerocopy.Config.Prefix)
	Domain uint32
	// AllowGroup also admits processes of this gid (-1: only the daemon's
	// own user and root).
	AllowGroup int
	// Idle makes Serve return after this long without pools or clients
	// (0: never). Auto-started daemons use it so none lingers.
	Idle   time.Duration
	Logger *slog.Logger
	// ShmDir is where topic segments live (default /dev/shm).
	ShmDir string
}

// Server owns the GPU pools of one domain on this host.
type Server struct {
	cfg  ServerConfig
	lfd  int
	stop chan struct{}
	wg   sync.WaitGroup
	// pooled is signalled when a pool is allocated: the janitor, which
	// has nothing to do while there is no pool and no idle exit, waits
	// for it instead of ticking.
	pooled chan struct{}

	mu      sync.Mutex // guards everything below
	devs    map[int]*cuda.Device
	pools   map[string]*pool
	conns   map[int]bool // client sockets, shut down by Close
	clients int
	lastUse time.Time
	closed  bool
}

type pool struct {
	PoolInfo
	tag   Tag // the incarnation of the segment the pool was made for
	alloc *cuda.Allocation
	ptr   cuda.DevicePtr // legacy IPC allocations
	ipc   cuda.IpcMemHandle
}

// Listen binds the daemon's socket. It fails with an error wrapping
// unix.EADDRINUSE when a daemon of the domain runs already.
func Listen(cfg ServerConfig) (*Server, error) {
	if cfg.ShmDir == "" {
		cfg.ShmDir = "/dev/shm"
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("daemon socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: "@" + SocketName(cfg.Prefix, cfg.Domain)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("binding daemon socket %q: %w", SocketName(cfg.Prefix, cfg.Domain), err)
	}
	if err := unix.Listen(fd, 64); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("daemon socket: %w", err)
	}
	return &Server{cfg: cfg, lfd: fd, stop: make(chan struct{}), pooled: make(chan struct{}, 1), devs: map[int]*cuda.Device{}, pools: map[string]*pool{}, conns: map[int]bool{}, lastUse: time.Now()}, nil
}

func (s *Server) log() *slog.Logger {
	if s.cfg.Logger != nil {
		return s.cfg.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Serve answers clients until Close, or until the server has been idle for
// cfg.Idle. It frees every pool before returning.
func (s *Server) Serve() error {
	s.wg.Add(1)
	go s.janitor()
	s.log().Info("rgaps daemon serving", "socket", SocketName(s.cfg.Prefix, s.cfg.Domain), "pid", os.Getpid())
	for {
		nfd, _, err := unix.Accept4(s.lfd, unix.SOCK_CLOEXEC)
		if err != nil {
			select {
			case <-s.stop:
				s.wg.Wait()
				s.freeAll()
				return nil
			default:
			}
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNABORTED) {
				continue
			}
			return fmt.Errorf("accepting: %w", err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			unix.Close(nfd)
			continue
		}
		s.clients++
		s.conns[nfd] = true
		s.lastUse = time.Now()
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serveConn(nfd)
	}
}

// Close stops Serve.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for fd := range s.conns {
		unix.Shutdown(fd, unix.SHUT_RDWR) // wakes its reader; serveConn closes it
	}
	s.mu.Unlock()
	close(s.stop)
	unix.Shutdown(s.lfd, unix.SHUT_RDWR)
	unix.Close(s.lfd)
}

// janitor frees the pools of removed topics and, with cfg.Idle, ends an
// idle server. Without pools and without an idle exit it has nothing to
// watch: it waits for the first pool (a daemon that bridges but serves no
// GPU makes no wake-ups for it).
func (s *Server) janitor() {
	defer s.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		nothing := s.cfg.Idle == 0 && len(s.pools) == 0
		s.mu.Unlock()
		if nothing {
			t.Stop()
			select {
			case <-s.stop:
				return
			case <-s.pooled:
			}
			t.Reset(250 * time.Millisecond)
			continue
		}
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		for name, p := range s.pools {
			if cur, ok := s.readTag(name, p.tag.Off); !ok || cur != p.tag.Value {
				s.log().Info("freeing GPU pool of a removed topic", "segment", name, "bytes", p.Size)
				s.free(p)
				delete(s.pools, name)
				s.lastUse = time.Now()
			}
		}
		idle := s.cfg.Idle > 0 && len(s.pools) == 0 && s.clients == 0 && time.Since(s.lastUse) > s.cfg.Idle
		s.mu.Unlock()
		if idle {
			s.log().Info("rgaps daemon idle, exiting")
			go s.Close()
			return
		}
	}
}

// readTag reads the 8-byte instance tag of the segment now behind name.
func (s *Server) readTag(name string, off uint64) (uint64, bool) {
	fd, err := unix.Open(filepath.Join(s.cfg.ShmDir, name), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	var b [8]byte
	if n, err := unix.Pread(fd, b[:], int64(off)); err != nil || n != 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[:]), true
}

func (s *Server) serveConn(fd int) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, fd)
		unix.Close(fd)
		s.clients--
		s.lastUse = time.Now()
		s.mu.Unlock()
	}()
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return
	}
	allowed := cred.Uid == uint32(os.Getuid()) || cred.Uid == 0 ||
		(s.cfg.AllowGroup >= 0 && cred.Gid == uint32(s.cfg.AllowGroup))
	buf := make([]byte, MaxMessage)
	for {
		n, _, _, _, err := unix.Recvmsg(fd, buf, nil, 0)
		if err != nil || n == 0 {
			return
		}
		if !allowed {
			s.log().Warn("refused a request from another user", "pid", cred.Pid, "uid", cred.Uid, "gid", cred.Gid)
			reply(fd, Reply{Error: fmt.Sprintf("uid %d may not use the GPU pools of uid %d", cred.Uid, os.Getuid())}, -1)
			return
		}
		var req Request
		if err := json.Unmarshal(buf[:n], &req); err != nil {
			reply(fd, Reply{Error: "malformed request: " + err.Error()}, -1)
			return
		}
		if err := req.validate(); err != nil {
			reply(fd, Reply{Error: err.Error()}, -1)
			return
		}
		r, sendFD := s.handle(req, cred)
		err = reply(fd, r, sendFD)
		if sendFD >= 0 {
			unix.Close(sendFD)
		}
		if err != nil {
			return
		}
	}
}

func reply(fd int, r Reply, sendFD int) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var oob []byte
	if sendFD >= 0 {
		oob = unix.UnixRights(sendFD)
	}
	return unix.Sendmsg(fd, b, oob, nil, 0)
}

func (s *Server) handle(req Request, cred *unix.Ucred) (Reply, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastUse = time.Now()
	switch req.Op {
	case "ping":
		return Reply{OK: true, Pid: os.Getpid()}, -1
	case "stats":
		r := Reply{OK: true, Pid: os.Getpid()}
		for _, p := range s.pools {
			r.Pools = append(r.Pools, p.PoolInfo)
		}
		sort.Slice(r.Pools, func(i, j int) bool { return r.Pools[i].Segment < r.Pools[j].Segment })
		return r, -1
	}
	cur, ok := s.readTag(req.Segment, req.TagOff)
	if !ok {
		return Reply{Error: fmt.Sprintf("no topic segment %q", req.Segment)}, -1
	}
	if req.Tag != 0 && req.Tag != cur {
		return Reply{Error: fmt.Sprintf("topic segment %q was removed and made again since the client mapped it; reopen it", req.Segment)}, -1
	}
	tag := Tag{Off: req.TagOff, Value: cur}
	p := s.pools[req.Segment]
	if p != nil && p.tag != tag {
		s.free(p) // the topic was removed and made again: its old pool is no one's
		delete(s.pools, req.Segment)
		p = nil
	}
	if p != nil && (p.Size < req.Size || p.Device != req.Device) {
		// Other processes map this pool: never replace it under them.
		return Reply{Error: fmt.Sprintf("the pool of %q has %d bytes on GPU %d; asked for %d bytes on GPU %d", req.Segment, p.Size, p.Device, req.Size, req.Device)}, -1
	}
	if p == nil {
		var err error
		if p, err = s.allocate(req, tag); err != nil {
			return Reply{Error: err.Error(), NotSup: errors.Is(err, cuda.ErrNotSupported)}, -1
		}
		s.pools[req.Segment] = p
		select {
		case s.pooled <- struct{}{}:
		default:
		}
		s.log().Info("GPU pool allocated", "segment", req.Segment, "bytes", p.Size, "device", p.Device, "handle", p.Handle, "for_pid", cred.Pid)
	}
	r := Reply{OK: true, Handle: p.Handle, Size: p.Size, Pid: os.Getpid()}
	if p.Handle == HandleIPC {
		r.IPC = p.ipc[:]
		return r, -1
	}
	fd, err := p.alloc.ExportFD()
	if err != nil {
		return Reply{Error: "exporting the pool: " + err.Error()}, -1
	}
	return r, fd
}

// allocate makes a pool: VMM with a POSIX fd where the device supports it,
// a legacy IPC handle otherwise. Must hold s.mu.
func (s *Server) allocate(req Request, tag Tag) (*pool, error) {
	dev := s.devs[req.Device]
	if dev == nil {
		d, err := cuda.Open(req.Device)
		if err != nil {
			return nil, err
		}
		s.devs[req.Device] = d
		dev = d
	}
	p := &pool{PoolInfo: PoolInfo{Segment: req.Segment, Device: req.Device}, tag: tag}
	vmm, _ := dev.VMMSupported()
	fds, _ := dev.POSIXFDSupported()
	if vmm && fds && os.Getenv("RGAPS_GPU_LEGACY_IPC") == "" {
		a, err := dev.CreateShareable(req.Size)
		if err != nil {
			return nil, fmt.Errorf("allocating %d bytes on GPU %d: %w", req.Size, req.Device, err)
		}
		p.alloc, p.Size, p.Handle = a, a.Size(), HandleVMMFD
		return p, nil
	}
	ptr, err := dev.Alloc(req.Size)
	if err != nil {
		return nil, fmt.Errorf("allocating %d bytes on GPU %d: %w", req.Size, req.Device, err)
	}
	h, err := dev.IpcGetMemHandle(ptr)
	if err != nil {
		dev.Free(ptr)
		return nil, fmt.Errorf("IPC handle for the pool: %w", err)
	}
	p.ptr, p.ipc, p.Size, p.Handle = ptr, h, req.Size, HandleIPC
	return p, nil
}

// free releases a pool's device memory. Must hold s.mu.
func (s *Server) free(p *pool) {
	if p.alloc != nil {
		p.alloc.Close()
	}
	if p.ptr != 0 {
		s.devs[p.Device].Free(p.ptr)
	}
}

func (s *Server) freeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, p := range s.pools {
		s.free(p)
		delete(s.pools, name)
	}
	for i, d := range s.devs {
		d.Close()
		delete(s.devs, i)
	}
}
