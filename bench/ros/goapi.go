package benchros

import (
	"errors"
	"fmt"
	"time"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	_ "github.com/rmw-rgaps/rmw_rgaps/bench/e2e/ours" // the child roles ours-pub and ours-sub
)

// goSystem is the Go API path on one host: the publisher and subscriber
// processes of `rgaps-bench e2e`'s rgaps system (roles ours-pub and
// ours-sub: zerocopy device loans, subscribers taking device pointers)
// with one shared-memory prefix, so no bridge is involved. Its requests
// and replies are those roles' (bench/e2e/ours).
type goSystem struct {
	env    *benche2e.Env
	pub    *benche2e.Child
	subs   []*benche2e.Child
	seq    uint64
	failed bool
}

type (
	goReq struct {
		Op     string `json:"op"`
		GPU    bool   `json:"gpu"`
		Device int    `json:"device"`
		Size   int64  `json:"size"`
		Seq    uint64 `json:"seq"`
		Want   int    `json:"want"`
	}
	goPubReply struct {
		benche2e.Status
		T0, T1 int64
	}
	goSubReply struct {
		benche2e.Status
		T2  int64
		Sum uint64
	}
)

const goTag = "rosgo"

func (s *goSystem) Name() string { return "go-api" }

func (s *goSystem) Start(env *benche2e.Env) error {
	e := *env
	e.ChildEnv = append(append(append([]string{}, env.ChildEnv...), poolEnv(env)...),
		"RGAPS_SHM_PREFIX="+prefix(goTag, 0), fmt.Sprintf("RGAPS_GPU_DEVICE=%d", env.DeviceA))
	s.env = &e
	return nil
}

func (s *goSystem) setSubs(n int) error {
	if len(s.subs) == n {
		return nil
	}
	err := benche2e.StopAll(append(s.subs, s.pub), 30*time.Second, false)
	s.subs, s.pub = nil, nil
	if err != nil {
		return err
	}
	init := goReq{Op: "init", GPU: s.env.GPU, Device: s.env.DeviceA, Want: n}
	for i := range n {
		p, err := benche2e.StartChild(s.env, s.env.A, fmt.Sprintf("go subscriber %d", i), "ours-sub")
		if err != nil {
			return err
		}
		s.subs = append(s.subs, p)
		if err := p.Call(init, &goSubReply{}); err != nil {
			return err
		}
	}
	if s.pub, err = benche2e.StartChild(s.env, s.env.A, "go publisher", "ours-pub"); err != nil {
		return err
	}
	return s.pub.Call(init, &goPubReply{})
}

func (s *goSystem) Round(size int64, n int) (r benche2e.Round, err error) {
	defer func() { s.failed = s.failed || err != nil }()
	if err := s.setSubs(n); err != nil {
		return r, err
	}
	s.seq++
	rq := goReq{Op: "round", Size: size, Seq: s.seq}
	for _, p := range s.subs {
		if err := p.Send(rq); err != nil {
			return r, err
		}
	}
	var pr goPubReply
	if err := s.pub.Call(rq, &pr); err != nil {
		return r, err
	}
	if pr.T1 > 0 {
		r.Stages = map[string]time.Duration{stagePublish: time.Duration(pr.T1 - pr.T0)}
	}
	want := benche2e.ExpectedChecksum(size, benche2e.SeedOf(s.seq))
	var bad []error
	for i, p := range s.subs {
		var sr goSubReply
		if err := p.Recv(&sr); err != nil {
			return r, err
		}
		if sr.Sum != want {
			bad = append(bad, fmt.Errorf("go subscriber %d: checksum %#x, want %#x", i, sr.Sum, want))
		}
		r.PerSub = append(r.PerSub, time.Duration(sr.T2-pr.T0))
	}
	return r, errors.Join(bad...)
}

func (s *goSystem) Close() error {
	err := benche2e.StopAll(append(s.subs, s.pub), 30*time.Second, s.failed)
	cleanPrefixes(goTag, 1)
	return err
}
