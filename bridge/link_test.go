package bridge

import (
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// The mailbox is the one place messages about other links are dropped:
// an accept or a note naming an earlier offer is dropped, a note naming
// none applies to whichever link there is, a change of the current link
// drops what was pending about the previous one, and after close nothing
// is taken.
func TestMailboxFiltersStaleLinks(t *testing.T) {
	dom, err := zerocopy.Open(zerocopy.Config{Prefix: testutil.Prefix() + "mb", PoolSize: 1 << 20, SkipStaleClean: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Close()
	m := mailbox{wake: dom.NewGuardCondition()}

	m.setOffer(2)
	if m.postAbout(1, true, func(in *inbox) { in.note = "old" }) {
		t.Error("a note about offer 1 was taken while offer 2 is current")
	}
	if m.postAbout(1, false, func(in *inbox) { in.accept = &ringAccept{Offer: 1} }) {
		t.Error("an accept of offer 1 was taken while offer 2 is current")
	}
	if m.postAbout(0, false, func(in *inbox) { in.accept = &ringAccept{} }) {
		t.Error("an accept naming no offer was taken")
	}
	if !m.postAbout(0, true, func(in *inbox) { in.note = "peer down" }) || !m.wake.Ready() {
		t.Error("a note naming no offer was dropped, or did not wake the link")
	}
	if !m.postAbout(2, false, func(in *inbox) { in.accept = &ringAccept{Offer: 2} }) {
		t.Error("the accept of the current offer was dropped")
	}
	in := m.take(linkOffered)
	if in.note != "peer down" || in.accept != nil || m.wake.Ready() {
		t.Errorf("take while offered: note %q, accept %v, wake still raised %v", in.note, in.accept, m.wake.Ready())
	}
	if in = m.take(linkConnected); in.accept == nil || in.accept.Offer != 2 {
		t.Errorf("take while connected: accept %+v, want the one of offer 2 (kept until connected)", in.accept)
	}

	m.postAbout(2, true, func(in *inbox) { in.note = "failed" })
	m.setOffer(3)
	if in = m.take(linkOffered); in.note != "" {
		t.Errorf("a note about offer 2 survived the move to offer 3: %q", in.note)
	}

	m.close()
	if m.post(func(in *inbox) { in.stop = true }) || m.take(linkDown).stop {
		t.Error("a post after close was taken")
	}
}

// A reader's doze about the previous link of a ring (offer 1), pending in
// the writer's mailbox when the link is replaced (down, then the answer to
// offer 2), is dropped. Applied to the new link's rails, it gave their
// doorbell its number, the new reader's dozes (numbered from 1 again)
// were ignored as overtaken, and its rails slept to their safety timeout.
func TestStaleDozeNotAppliedToNewLink(t *testing.T) {
	_, b := pair(t, "tcp", nil)
	var m mailbox
	m.wake = b.dom.NewGuardCondition()
	defer m.wake.Close()

	m.setOffer(1) // link of offer 1 up
	// The reader's rail 0 of link 1 dozes (its 7th quiet spell).
	if !m.postAbout(1, false, func(in *inbox) { in.addDoze(dozeMsg{Offer: 1, Rail: 0, Seq: 7, Imms: 1}) }) {
		t.Fatal("doze of the current link dropped")
	}
	// Before the link goroutine takes it: link 1 fails, offer 2 is answered.
	m.setOffer(0)
	m.setOffer(2)
	in := m.take(linkUp)

	// The new link's rails (as writerLink.apply applies in.dozes to them).
	rung := 0
	s := &railSet{ring: func(int, uint64) { rung++ }}
	s.rails = []*rail{{set: s, i: 0}}
	s.rails[0].bell.imms = 1 // its hello
	for _, d := range in.dozes {
		s.dozes(d.Rail, d.Seq, d.Imms)
	}
	// Two quiet spells of the new link: the reader's rail 0 dozes (seq 1,
	// then 2, numbered anew by the new rails), each followed by a record.
	for seq := uint64(1); seq <= 2; seq++ {
		before := rung
		s.dozes(0, seq, seq) // it received its hello and seq-1 records
		s.rails[0].bell.pushed(s.rails[0], s.ring)
		if rung == before {
			t.Fatalf("doze %d of the new link got no doorbell: a doze of offer 1 (seq 7) reached the link of offer 2 (%d were pending after setOffer(2)); the reader's rail sleeps to its safety timeout", seq, len(in.dozes))
		}
	}
}
