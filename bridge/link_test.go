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
