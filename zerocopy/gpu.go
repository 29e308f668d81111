package zerocopy

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
)

// DevicePtr is a CUDA device address valid in this process's primary
// context of Config.Device (a CUdeviceptr: pass it to kernels and CUDA
// calls as a uint64).
type DevicePtr uint64

type closer interface{ Close() error }

// Memory says which form of the data an endpoint uses.
type Memory int

const (
	// MemoryHost: the endpoint reads and writes host memory (Bytes).
	MemoryHost Memory = iota
	// MemoryGPU: the endpoint reads and writes device memory (DevicePtr); a
	// topic first opened by such an endpoint gets a GPU pool.
	MemoryGPU
	// MemoryAny (subscriptions only): the subscription reads whichever
	// form each sample has, so no publisher makes a copy for it: Bytes is
	// nil for a sample with only a device form, which the reader copies
	// out itself where it needs it (Copier.StageOut). For a relay that
	// needs host bytes only for some messages (the DDS gateway writes only
	// while a DDS reader is matched), and must not make host publishers
	// copy to the device.
	MemoryAny
)

func (m Memory) String() string {
	switch m {
	case MemoryGPU:
		return "gpu"
	case MemoryAny:
		return "any"
	}
	return "host"
}

// gpuState is a process's CUDA device and daemon connection, opened on first
// use (a process that never touches GPU data never loads CUDA).
type gpuState struct {
	once   sync.Once
	tried  atomic.Bool // once ran: the CUDA driver was looked for
	dev    *cuda.Device
	client *gpupool.Client
	err    error
}

// GPUInfo describes the CUDA device a domain uses for GPU topics
// (Config.Device).
type GPUInfo struct {
	Index       int    // the CUDA device ordinal
	Name        string // as the driver reports it
	TotalMemory uint64 // bytes
}

// GPU opens the domain's CUDA device on first use and describes it; the
// error wraps ErrNotSupported without a usable GPU (no driver, no device,
// or a device without what GPU pools need), which is how callers test for
// GPU support before creating GPU endpoints.
func (d *Domain) GPU() (GPUInfo, error) {
	dev, err := d.gpu()
	if err != nil {
		return GPUInfo{}, err
	}
	info := GPUInfo{Index: dev.Ordinal()}
	if info.Name, err = dev.Name(); err != nil {
		return GPUInfo{}, err
	}
	if info.TotalMemory, err = dev.TotalMem(); err != nil {
		return GPUInfo{}, err
	}
	return info, nil
}

// GPUTried reports whether this domain has looked for its CUDA device
// (loading the driver library where there is one), whatever it found: a
// process that never touches GPU data never does.
func (d *Domain) GPUTried() bool { return d.gpuState.tried.Load() }

// gpu returns the process's CUDA device for this domain, opening it on
// first use; the error wraps ErrNotSupported without a usable GPU.
func (d *Domain) gpu() (*cuda.Device, error) {
	d.gpuState.once.Do(func() {
		d.gpuState.tried.Store(true)
		dev, err := cuda.Open(d.cfg.Device)
		if err != nil {
			d.gpuState.err = err
			return
		}
		d.gpuState.dev = dev
	})
	return d.gpuState.dev, d.gpuState.err
}

// daemon returns the connection to the pool owner, dialling (and starting
// it) on first use.
func (d *Domain) daemon() (*gpupool.Client, error) {
	d.gpuMu.Lock()
	defer d.gpuMu.Unlock()
	if d.gpuState.client != nil {
		return d.gpuState.client, nil
	}
	c, err := gpupool.Dial(d.cfg.Prefix, d.cfg.Domain, !d.cfg.NoDaemonAutostart)
	if err != nil {
		return nil, err
	}
	d.gpuState.client = c
	return c, nil
}

func (d *Domain) closeGPU() {
	if d.gpuState.client != nil {
		d.gpuState.client.Close()
	}
	if d.gpuState.dev != nil {
		d.gpuState.dev.Close()
	}
}

// deviceBase maps a GPU topic's device pool into this process (asking the
// daemon once) and returns its base address.
func (t *Topic) deviceBase() (DevicePtr, error) {
	t.gpuMu.Lock()
	defer t.gpuMu.Unlock()
	if t.devBase != 0 {
		return t.devBase, nil
	}
	if t.lay.poolKind != PoolGPU {
		return 0, fmt.Errorf("topic %s has no device pool", t.name)
	}
	dev, err := t.d.gpu()
	if err != nil {
		return 0, err
	}
	c, err := t.d.daemon()
	if err != nil {
		return 0, err
	}
	m, err := c.Pool(dev, t.seg.Name(), gpupool.Tag{Off: hInstance, Value: t.instance}, t.lay.devPoolSize)
	if err != nil {
		return 0, err
	}
	if m.Size < t.lay.devPoolSize {
		m.Close()
		return 0, fmt.Errorf("%w: the daemon's pool for %s has %d bytes, the topic needs %d", ErrCorrupt, t.name, m.Size, t.lay.devPoolSize)
	}
	t.devBase, t.devMap = DevicePtr(m.Ptr), m
	if lg := t.d.cfg.Logger; lg != nil {
		lg.Info("GPU pool mapped", "topic", t.name, "bytes", m.Size, "handle", m.Kind)
	}
	return t.devBase, nil
}

// hostDeviceBase registers the host pool with CUDA (page-locked, mapped for
// the device) in this process and returns its device address: GPU readers
// of a host topic read it in place over PCIe, and copies to and from it run
// at pinned speed.
func (t *Topic) hostDeviceBase() (DevicePtr, error) {
	t.gpuMu.Lock()
	defer t.gpuMu.Unlock()
	if t.hostReg {
		return t.hostDev, nil
	}
	dev, err := t.d.gpu()
	if err != nil {
		return 0, err
	}
	// Pinning touches every page of the pool: commit all of it first, so
	// that a full /dev/shm is an error here rather than a fault in the
	// driver (and the commit words stay true).
	if err := t.commitWord(t.u64(hPoolCommitted), t.lay.poolOff, t.lay.poolSize, t.lay.poolSize); err != nil {
		return 0, fmt.Errorf("pinning the host pool of %s: %w", t.name, err)
	}
	if err := dev.HostRegister(t.pool, cuda.HostRegisterPortable|cuda.HostRegisterDeviceMap); err != nil {
		return 0, fmt.Errorf("pinning the host pool of %s: %w", t.name, err)
	}
	p, err := dev.HostDevicePointer(t.pool)
	if err != nil {
		dev.HostUnregister(t.pool)
		return 0, fmt.Errorf("mapping the host pool of %s: %w", t.name, err)
	}
	t.hostReg, t.hostDev = true, DevicePtr(p)
	return DevicePtr(p), nil
}

// gpuPrepared reports whether prepareGPU has run successfully.
func (t *Topic) gpuPrepared() bool {
	t.gpuMu.Lock()
	defer t.gpuMu.Unlock()
	return t.hostReg && (t.lay.poolKind != PoolGPU || t.devBase != 0)
}

// prepareGPU maps what a GPU endpoint of this process will use: the host
// pool's registration always, the device pool on GPU topics.
func (t *Topic) prepareGPU() error {
	if _, err := t.hostDeviceBase(); err != nil {
		return err
	}
	if t.lay.poolKind == PoolGPU {
		if _, err := t.deviceBase(); err != nil {
			return err
		}
	}
	return nil
}

func (t *Topic) releaseGPU() {
	t.gpuMu.Lock()
	defer t.gpuMu.Unlock()
	if t.devMap != nil {
		t.devMap.Close()
		t.devMap, t.devBase = nil, 0
	}
	if t.hostReg {
		if dev, err := t.d.gpu(); err == nil {
			dev.HostUnregister(t.pool)
		}
		t.hostReg, t.hostDev = false, 0
	}
}

func formName(dev bool) string {
	if dev {
		return "device"
	}
	return "host"
}

// missingForm reports a form of sample n (device when dev) that a matched
// reader needs and the sample lacks. Only GPU topics have two forms: on a
// host topic a GPU reader reads the host block through its mapped address.
// Must hold the topic lock.
func (t *Topic) missingForm(n uint32, peers map[GID]peerInfo) (dev bool, missing bool) {
	if t.lay.poolKind != PoolGPU {
		return false, false
	}
	so := t.sampleOff(n)
	hasHost, hasDev := t.u32(so+sBlock).Load() != 0, t.u32(so+sDevBlock).Load() != 0
	for _, pi := range peers {
		if pi.flags&flagWantsHost != 0 && !hasHost {
			return false, true
		}
		if pi.flags&flagWantsDevice != 0 && !hasDev {
			return true, true
		}
	}
	return false, false
}

// copyForm fills sample n's block of one form (device when toDev) from its
// other form. The host pool is registered with CUDA first, so the copy runs
// at pinned speed straight into (or out of) shared memory. It runs on the
// engine's own copier and waits for that copy alone: not for the context,
// where the bridge's copiers (and the application's kernels) are busy.
// underLock says the caller holds the topic lock: then only what is set up
// already may be used (no CUDA start-up or daemon round trip while other
// processes wait for the lock).
func (t *Topic) copyForm(n uint32, toDev, underLock bool) error {
	so := t.sampleOff(n)
	dst := t.u64(so + sOffset).Load()
	if toDev {
		dst = t.u64(so + sDevOffset).Load()
	}
	return t.copyFormAt(n, toDev, underLock, dst)
}

// copyFormAt is copyForm into the block at offset dst of the target form's
// pool, which the record need not name yet (addForm).
func (t *Topic) copyFormAt(n uint32, toDev, underLock bool, dst uint64) error {
	if _, err := t.d.gpu(); err != nil {
		return err
	}
	if underLock && !t.gpuPrepared() {
		return fmt.Errorf("%w: GPU pools of %s not mapped in this process", ErrNotSupported, t.name)
	}
	if _, err := t.hostDeviceBase(); err != nil {
		return err
	}
	base, err := t.deviceBase()
	if err != nil {
		return err
	}
	so := t.sampleOff(n)
	size := t.u64(so + sSize).Load()
	hoff, doff := t.u64(so+sOffset).Load(), t.u64(so+sDevOffset).Load()
	if toDev {
		doff = dst
	} else {
		hoff = dst
	}
	if pc := t.poolCommitted(); hoff > pc || size > pc-hoff || doff > t.lay.devPoolSize || size > t.lay.devPoolSize-doff {
		return fmt.Errorf("%w: topic %s: sample %d claims %d bytes at offsets %d/%d", ErrCorrupt, t.name, n, size, hoff, doff)
	}
	host := t.pool[hoff : hoff+size : hoff+size]
	cp, err := t.d.ownCopier()
	if err != nil {
		return err
	}
	x, err := cp.queue(func(dev *cuda.Device, s *cuda.Stream) error {
		if toDev {
			return dev.MemcpyHtoDAsync(cuda.DevicePtr(base+DevicePtr(doff)), host, s)
		}
		return dev.MemcpyDtoHAsync(host, cuda.DevicePtr(base+DevicePtr(doff)), s)
	})
	if err != nil {
		return err
	}
	return x.Wait()
}

// ownCopier is the engine's copier (copyForm), made on first use.
func (d *Domain) ownCopier() (*Copier, error) {
	d.gpuMu.Lock()
	c := d.formCopier
	d.gpuMu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := d.NewCopier()
	if err != nil {
		return nil, err
	}
	d.gpuMu.Lock()
	if d.formCopier == nil {
		d.formCopier, c = c, nil
	}
	own := d.formCopier
	d.gpuMu.Unlock()
	if c != nil {
		c.Close() // another goroutine made one meanwhile
	}
	return own, nil
}

// PinHost page-locks b (memory mapped outside the Go heap, such as a
// transport's ring) for the domain's GPU, so that copies between it and
// device loans (Loan.CopyIn) run at pinned speed. It returns the function
// that unpins it. Without a GPU it returns an error wrapping
// ErrNotSupported and nothing needs unpinning.
func (d *Domain) PinHost(b []byte) (unpin func() error, err error) {
	dev, err := d.gpu()
	if err != nil {
		return nil, err
	}
	if err := dev.HostRegister(b, cuda.HostRegisterPortable); err != nil {
		return nil, err
	}
	return func() error { return dev.HostUnregister(b) }, nil
}
