package gateway

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Service payloads (docs/ARCHITECTURE.md §3.10 and §3.13).
//
// rgaps: [16-byte client GID][int64 sequence LE][4 reserved][CDR header][body].
// rmw_cyclonedds_cpp: [CDR header][uint64 client id][int64 sequence][body]:
// its request header sits after the encapsulation header, 16 bytes, so
// the body keeps its alignment and is carried byte for byte.
const (
	srvPrefix  = 28 // rgaps: GID, sequence, reserved
	srvID      = 24 // rgaps: GID and sequence, the request id
	ddsHeader  = 16 // DDS: client id and sequence after the CDR header
	cdrHeader  = 4
	maxPending = 4096 // request ids remembered per mirror while unanswered
	reqTopic   = "/_rgaps_rq"
	respTopic  = "/_rgaps_rr"
)

// pending maps the sequence numbers a service mirror gives the requests
// it forwards to the ids the requests came with; the oldest are forgotten
// beyond maxPending.
type pending struct {
	mu    sync.Mutex
	next  int64
	ids   map[int64][srvID]byte
	order []int64
}

func (p *pending) add(id [srvID]byte) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids == nil {
		p.ids = map[int64][srvID]byte{}
	}
	p.next++
	p.ids[p.next] = id
	p.order = append(p.order, p.next)
	if len(p.order) > maxPending {
		delete(p.ids, p.order[0])
		p.order = p.order[1:]
	}
	return p.next
}

func (p *pending) take(seq int64) ([srvID]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.ids[seq]
	delete(p.ids, seq)
	return id, ok
}

// svcEnds are the ends of a service seen in one graph.
type svcEnds struct {
	w              want
	seen           bool
	client, server bool
}

// serviceWants lists the services to carry: toRgaps those with a DDS
// client (a request writer of another participant) and a local rgaps
// service (a subscription on /_rgaps_rq<svc> that is not republishing),
// toDDS those with a local rgaps client (a publisher on /_rgaps_rq<svc>)
// and a DDS service (a request reader of another participant). The want's
// typ and hash are the request's, resp and rhash the response's, from the
// rgaps endpoints.
func (g *Gateway) serviceWants() (toRgaps, toDDS map[string]want, err error) {
	topics, err := g.dom.Topics()
	if err != nil {
		return nil, nil, err
	}
	local := map[string]*svcEnds{}
	for _, ti := range topics {
		name, isReq := strings.CutPrefix(ti.Name, reqTopic)
		if !isReq || !g.carriedService(name) {
			continue
		}
		eps, err := g.dom.Endpoints(ti.Name)
		if err != nil {
			continue
		}
		resp, err := g.dom.Endpoints(respTopic + name)
		if err != nil {
			continue
		}
		s := &svcEnds{}
		for _, ep := range eps {
			if ep.Republish {
				continue
			}
			s.client = s.client || ep.Kind == zerocopy.KindPublisher
			s.server = s.server || ep.Kind == zerocopy.KindSubscription
			merge(&s.w, !s.seen, ep.QoS)
			s.seen = true
			s.w.typ, s.w.hash = ep.Type, ep.TypeHash
		}
		for _, ep := range resp {
			if !ep.Republish && s.seen {
				s.w.resp, s.w.rhash = ep.Type, ep.TypeHash
			}
		}
		if s.seen && s.w.resp != "" {
			local[name] = s
		}
	}
	eps, err := g.part.Endpoints()
	if err != nil {
		return nil, nil, err
	}
	own := g.part.GUID().Prefix()
	toRgaps, toDDS = map[string]want{}, map[string]want{}
	for _, ep := range eps {
		name, kind := dds.ROSName(ep.Topic)
		s := local[name]
		if kind != dds.KindRequest || s == nil || ep.Participant.Prefix() == own || ofGateway(ep.UserData) {
			continue // another gateway's: rgaps services reach each other through the bridge
		}
		if typ, ok := dds.ROSTypeName(ep.Type); !ok || typ != s.w.typ {
			continue // another type: the DDS side would not match
		}
		var into map[string]want
		switch {
		case ep.Writer && s.server:
			into = toRgaps
		case !ep.Writer && s.client:
			into = toDDS
		default:
			continue
		}
		w, ok := into[name]
		if !ok {
			w = s.w
		}
		merge(&w, false, ep.QoS)
		w.q.History = qos.HistoryKeepLast // a request never holds a client back
		into[name] = w
	}
	return toRgaps, toDDS, nil
}

// carriedService reports whether the gateway carries the service.
func (g *Gateway) carriedService(name string) bool {
	return name != "" && g.carried(name)
}

// svcMirror is what both directions of a service mirror share: the rgaps
// publisher and subscription (republishing), the DDS writer and reader
// (on the request and reply topics), the id the gateway stands as a
// client under, and the requests waiting for replies.
type svcMirror struct {
	mirror
	pub  *zerocopy.Publisher
	sub  *zerocopy.Subscription
	wr   *dds.Writer
	rd   *dds.Reader
	own  [12]byte
	pend pending
	wg   sync.WaitGroup
	// closers close the endpoints made so far
	closers []func() error
}

// svcToRgaps carries a service from DDS clients to an rgaps service:
// requests rq/ → /_rgaps_rq (as client pub.GID()), replies /_rgaps_rr →
// rr/ with the DDS request's header.
type svcToRgaps struct{ *svcMirror }

// svcToDDS carries a service from rgaps clients to a DDS service:
// requests /_rgaps_rq → rq/ (as DDS client id), replies rr/ → /_rgaps_rr
// with the rgaps request's GID and sequence.
type svcToDDS struct {
	*svcMirror
	id [8]byte
}

// openService makes a service mirror's four endpoints; toDDS: the rgaps
// side subscribes to requests and publishes replies, and the DDS side
// writes requests and reads replies; otherwise the reverse. kind is
// "serviceid" or "clientid": how rmw_cyclonedds_cpp pairs a service's or
// a client's reader and writer (USER_DATA), and the value is made here.
func (g *Gateway) openService(name string, w want, toDDS bool) (*svcMirror, error) {
	reqName, repName, err := dds.ServiceTopicNames(name)
	if err != nil {
		return nil, err
	}
	reqType, err := dds.TypeName(w.typ)
	if err != nil {
		return nil, err
	}
	repType, err := dds.TypeName(w.resp)
	if err != nil {
		return nil, err
	}
	rq, err := g.part.RawTopic(reqName, reqType)
	if err != nil {
		return nil, err
	}
	rr, err := g.part.RawTopic(repName, repType)
	if err != nil {
		return nil, err
	}
	g.svcSerial++
	key := "serviceid="
	if toDDS {
		key = "clientid="
	}
	pairID := fmt.Sprintf("%s%x.%d;", key, g.part.GUID().Prefix(), g.svcSerial)
	reqUD := append(userData(w.hash), pairID...)
	repUD := append(userData(w.rhash), pairID...)
	m := &svcMirror{mirror: newMirror(name, w, 0), own: g.part.GUID().Prefix()}
	fail := func(err error) (*svcMirror, error) {
		m.close()
		return nil, err
	}
	rgReq := zerocopy.EndpointSpec{Topic: reqTopic + name, Type: w.typ, TypeHash: w.hash, Node: Node, QoS: w.q, Republish: true}
	rgRep := zerocopy.EndpointSpec{Topic: respTopic + name, Type: w.resp, TypeHash: w.rhash, Node: Node, QoS: w.q, Republish: true}
	ddsOut, ddsIn := dds.EndpointOptions{QoS: w.q, UserData: repUD}, dds.EndpointOptions{QoS: w.q, UserData: reqUD}
	wrTopic, rdTopic := rr, rq
	if toDDS {
		rgReq, rgRep = rgRep, rgReq // publish replies, subscribe to requests
		ddsOut, ddsIn = dds.EndpointOptions{QoS: w.q, UserData: reqUD}, dds.EndpointOptions{QoS: w.q, UserData: repUD}
		wrTopic, rdTopic = rq, rr
	}
	rgReq.Memory = zerocopy.MemoryHost
	if m.pub, err = g.dom.NewPublisher(rgReq); err != nil {
		return fail(err)
	}
	m.closers = append(m.closers, m.pub.Close)
	if m.sub, err = g.dom.NewSubscription(rgRep); err != nil {
		return fail(err)
	}
	m.closers = append(m.closers, m.sub.Close)
	if m.wr, err = wrTopic.NewWriter(ddsOut); err != nil {
		return fail(err)
	}
	m.closers = append(m.closers, m.wr.Close)
	if m.rd, err = rdTopic.NewReader(ddsIn); err != nil {
		return fail(err)
	}
	m.closers = append(m.closers, m.rd.Close)
	return m, nil
}

func (g *Gateway) startSvcToRgaps(name string, w want) (running, error) {
	m, err := g.openService(name, w, false)
	if err != nil {
		return nil, err
	}
	s := &svcToRgaps{svcMirror: m}
	s.run(g, s.request, s.reply)
	return s, nil
}

func (g *Gateway) startSvcToDDS(name string, w want) (running, error) {
	m, err := g.openService(name, w, true)
	if err != nil {
		return nil, err
	}
	h := fnv.New64a()
	h.Write(m.own[:])
	fmt.Fprintf(h, "%s.%d", name, g.svcSerial)
	s := &svcToDDS{svcMirror: m}
	copy(s.id[:], h.Sum(nil))
	s.run(g, s.reply, s.request)
	return s, nil
}

// request (DDS → rgaps): [CDR][id][seq][body] → [GID][seq'][0][CDR][body].
func (s *svcToRgaps) request(d []byte) error {
	if len(d) < cdrHeader+ddsHeader {
		return errShort
	}
	var id [srvID]byte
	copy(id[:], d[cdrHeader:cdrHeader+ddsHeader])
	seq := s.pend.add(id)
	gid := s.pub.GID()
	return publishService(s.pub, gid[:], seq, d[:cdrHeader], d[cdrHeader+ddsHeader:])
}

// reply (rgaps → DDS): only those addressed to the mirror's GID, with
// the DDS request's header back.
func (s *svcToRgaps) reply(b []byte) error {
	gid := s.pub.GID()
	if len(b) < srvPrefix+cdrHeader || !bytes.Equal(b[:16], gid[:]) {
		return errNotOurs
	}
	id, ok := s.pend.take(int64(binary.LittleEndian.Uint64(b[16:24])))
	if !ok {
		return errNotOurs
	}
	out := make([]byte, 0, len(b)-srvPrefix+ddsHeader)
	out = append(append(append(out, b[srvPrefix:srvPrefix+cdrHeader]...), id[:ddsHeader]...), b[srvPrefix+cdrHeader:]...)
	return s.wr.Write(out)
}

// request (rgaps → DDS): [GID][seq][0][CDR][body] → [CDR][id][seq'][body].
func (s *svcToDDS) request(b []byte) error {
	if len(b) < srvPrefix+cdrHeader {
		return errShort
	}
	seq := s.pend.add([srvID]byte(b[:srvID]))
	out := make([]byte, 0, len(b)-srvPrefix+ddsHeader)
	out = append(append(out, b[srvPrefix:srvPrefix+cdrHeader]...), s.id[:]...)
	out = binary.LittleEndian.AppendUint64(out, uint64(seq))
	return s.wr.Write(append(out, b[srvPrefix+cdrHeader:]...))
}

// reply (DDS → rgaps): only those with the mirror's client id, with the
// rgaps request's GID and sequence back.
func (s *svcToDDS) reply(d []byte) error {
	if len(d) < cdrHeader+ddsHeader || !bytes.Equal(d[cdrHeader:cdrHeader+8], s.id[:]) {
		return errNotOurs
	}
	id, ok := s.pend.take(int64(binary.LittleEndian.Uint64(d[cdrHeader+8 : cdrHeader+ddsHeader])))
	if !ok {
		return errNotOurs
	}
	return publishService(s.pub, id[:16], int64(binary.LittleEndian.Uint64(id[16:])), d[:cdrHeader], d[cdrHeader+ddsHeader:])
}

var (
	errShort   = errors.New("service payload too short")
	errNotOurs = errors.New("not for the gateway") // dropped quietly
)

// publishService publishes [gid][seq][4 zero][cdr][body] on pub.
func publishService(pub *zerocopy.Publisher, gid []byte, seq int64, cdr, body []byte) error {
	l, err := pub.Loan(srvPrefix + len(cdr) + len(body))
	if err != nil {
		return err
	}
	b := l.Bytes()
	copy(b, gid)
	binary.LittleEndian.PutUint64(b[16:24], uint64(seq))
	clear(b[24:srvPrefix])
	copy(b[srvPrefix+copy(b[srvPrefix:], cdr):], body)
	return l.Publish()
}

// run starts the two goroutines: fromDDS handles what the DDS reader
// takes (samples of the gateway's own writers dropped), fromRgaps what
// the subscription takes.
func (m *svcMirror) run(g *Gateway, fromDDS, fromRgaps func([]byte) error) {
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		for !m.stopping() {
			if _, err := m.rd.Wait(waitPeriod); err != nil {
				return
			}
			for {
				s, ok, err := m.rd.Take()
				if err != nil || !ok {
					break
				}
				if s.Writer.Prefix() != m.own {
					m.count(g, fromDDS(s.Data))
				}
			}
		}
	}()
	go func() {
		defer m.wg.Done()
		for !m.stopping() {
			s, err := m.sub.TakeWait(waitPeriod)
			if err != nil {
				continue // timeout, no data; closed ends with stopping
			}
			if s.Meta() != nil {
				m.count(g, errors.New("split message"))
			} else {
				m.count(g, fromRgaps(s.Bytes()))
			}
			s.Return()
		}
	}()
	go func() {
		m.wg.Wait()
		close(m.done)
	}()
}

// count counts one message handled with err, logging the first failure.
func (m *svcMirror) count(g *Gateway, err error) {
	switch {
	case err == nil:
		m.carried.Add(1)
	case errors.Is(err, errNotOurs):
	default:
		if m.skipped.Add(1) == 1 && !errors.Is(err, zerocopy.ErrClosed) {
			g.log.Warn("a service message was not carried", "service", m.name, "err", err)
		}
	}
}

func (m *svcMirror) ddsName() string { return m.rd.Topic().Name() + "," + m.wr.Topic().Name() }

// stop ends the goroutines and closes the endpoints.
func (m *svcMirror) stop() {
	m.stopLoop()
	m.close()
}

func (m *svcMirror) close() {
	for _, c := range slices.Backward(m.closers) {
		c()
	}
}
