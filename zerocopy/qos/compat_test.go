package qos

import (
	"testing"
	"time"
)

// base is a fully concrete profile compatible with itself; the tests change
// one or two policies at a time.
func base() Profile {
	return Profile{History: HistoryKeepLast, Depth: 10, Reliability: ReliabilityReliable,
		Durability: DurabilityVolatile, Liveliness: LivelinessAutomatic}
}

func TestCheckCompatible(t *testing.T) {
	type edit func(*Profile)
	rel := func(r Reliability) edit { return func(p *Profile) { p.Reliability = r } }
	dur := func(d Durability) edit { return func(p *Profile) { p.Durability = d } }
	liv := func(l Liveliness) edit { return func(p *Profile) { p.Liveliness = l } }
	deadline := func(d time.Duration) edit { return func(p *Profile) { p.Deadline = d } }
	lease := func(d time.Duration) edit { return func(p *Profile) { p.LivelinessLease = d } }
	all := func(es ...edit) edit {
		return func(p *Profile) {
			for _, e := range es {
				e(p)
			}
		}
	}
	none := func(*Profile) {}

	tests := []struct {
		name     string
		pub, sub edit
		want     Compatibility
		reason   string
		policy   Policy
	}{
		{"identical", none, none, Ok, "", PolicyNone},

		// Reliability.
		{"reliable/reliable", rel(ReliabilityReliable), rel(ReliabilityReliable), Ok, "", PolicyNone},
		{"reliable/best_effort", rel(ReliabilityReliable), rel(ReliabilityBestEffort), Ok, "", PolicyNone},
		{"best_effort/best_effort", rel(ReliabilityBestEffort), rel(ReliabilityBestEffort), Ok, "", PolicyNone},
		{"best_effort/reliable", rel(ReliabilityBestEffort), rel(ReliabilityReliable), Error,
			"ERROR: Best effort publisher and reliable subscription;", PolicyReliability},

		// Durability.
		{"transient_local/transient_local", dur(DurabilityTransientLocal), dur(DurabilityTransientLocal), Ok, "", PolicyNone},
		{"transient_local/volatile", dur(DurabilityTransientLocal), dur(DurabilityVolatile), Ok, "", PolicyNone},
		{"volatile/transient_local", dur(DurabilityVolatile), dur(DurabilityTransientLocal), Error,
			"ERROR: Volatile publisher and transient local subscription;", PolicyDurability},

		// Deadline (0 = none).
		{"deadline none/none", none, none, Ok, "", PolicyNone},
		{"deadline set/none", deadline(time.Second), none, Ok, "", PolicyNone},
		{"deadline none/set", none, deadline(time.Second), Error,
			"ERROR: Subscription has a deadline, but publisher does not;", PolicyDeadline},
		{"deadline equal", deadline(time.Second), deadline(time.Second), Ok, "", PolicyNone},
		{"deadline pub shorter", deadline(time.Second), deadline(2 * time.Second), Ok, "", PolicyNone},
		{"deadline pub longer", deadline(2 * time.Second), deadline(time.Second), Error,
			"ERROR: Subscription deadline is less than publisher deadline;", PolicyDeadline},
		{"deadline 1ns longer", deadline(time.Second + 1), deadline(time.Second), Error,
			"ERROR: Subscription deadline is less than publisher deadline;", PolicyDeadline},

		// Liveliness.
		{"automatic/automatic", none, none, Ok, "", PolicyNone},
		{"manual/automatic", liv(LivelinessManualByTopic), liv(LivelinessAutomatic), Ok, "", PolicyNone},
		{"manual/manual", liv(LivelinessManualByTopic), liv(LivelinessManualByTopic), Ok, "", PolicyNone},
		{"automatic/manual", liv(LivelinessAutomatic), liv(LivelinessManualByTopic), Error,
			"ERROR: Publisher's liveliness is automatic and subscription's is manual by topic;", PolicyLiveliness},

		// Lease duration (0 = infinite).
		{"lease set/none", lease(time.Second), none, Ok, "", PolicyNone},
		{"lease none/set", none, lease(time.Second), Error,
			"ERROR: Subscription has a liveliness lease duration, but publisher does not;", PolicyLivelinessLeaseDuration},
		{"lease equal", lease(time.Second), lease(time.Second), Ok, "", PolicyNone},
		{"lease pub shorter", lease(time.Second), lease(3 * time.Second), Ok, "", PolicyNone},
		{"lease pub longer", lease(3 * time.Second), lease(time.Second), Error,
			"ERROR: Subscription liveliness lease duration is less than publisher;", PolicyLivelinessLeaseDuration},

		// Several errors: all reported in ROS order, the first one is the policy.
		{"all errors",
			all(rel(ReliabilityBestEffort), dur(DurabilityVolatile), deadline(2*time.Second), liv(LivelinessAutomatic), lease(2*time.Second)),
			all(rel(ReliabilityReliable), dur(DurabilityTransientLocal), deadline(time.Second), liv(LivelinessManualByTopic), lease(time.Second)),
			Error,
			"ERROR: Best effort publisher and reliable subscription;" +
				"ERROR: Volatile publisher and transient local subscription;" +
				"ERROR: Subscription deadline is less than publisher deadline;" +
				"ERROR: Publisher's liveliness is automatic and subscription's is manual by topic;" +
				"ERROR: Subscription liveliness lease duration is less than publisher;",
			PolicyReliability},
		{"durability then liveliness", dur(DurabilityVolatile), all(dur(DurabilityTransientLocal), liv(LivelinessManualByTopic)), Error,
			"ERROR: Volatile publisher and transient local subscription;" +
				"ERROR: Publisher's liveliness is automatic and subscription's is manual by topic;",
			PolicyDurability},

		// Errors suppress warnings.
		{"error hides warning", all(rel(ReliabilityBestEffort), dur(DurabilitySystemDefault)),
			all(rel(ReliabilityReliable), dur(DurabilitySystemDefault)), Error,
			"ERROR: Best effort publisher and reliable subscription;", PolicyReliability},

		// Reliability warnings.
		{"reliability both system_default", rel(ReliabilitySystemDefault), rel(ReliabilitySystemDefault), Warning,
			"WARNING: Publisher reliability is system_default and subscription reliability is system_default;", PolicyNone},
		{"reliability unknown/system_default", rel(ReliabilityUnknown), rel(ReliabilitySystemDefault), Warning,
			"WARNING: Publisher reliability is unknown and subscription reliability is system_default;", PolicyNone},
		{"reliability out-of-range is unknown", rel(Reliability(42)), rel(ReliabilityReliable), Warning,
			"WARNING: Reliable subscription, but publisher is unknown;", PolicyNone},
		{"reliability system_default/reliable", rel(ReliabilitySystemDefault), rel(ReliabilityReliable), Warning,
			"WARNING: Reliable subscription, but publisher is system_default;", PolicyNone},
		{"reliability system_default/best_effort", rel(ReliabilitySystemDefault), rel(ReliabilityBestEffort), Ok, "", PolicyNone},
		{"reliability best_effort/system_default", rel(ReliabilityBestEffort), rel(ReliabilitySystemDefault), Warning,
			"WARNING: Best effort publisher, but subscription is system_default;", PolicyNone},
		{"reliability reliable/unknown", rel(ReliabilityReliable), rel(ReliabilityUnknown), Ok, "", PolicyNone},
		{"reliability best_available/reliable", rel(ReliabilityBestAvailable), rel(ReliabilityReliable), Ok, "", PolicyNone},
		{"reliability best_effort/best_available", rel(ReliabilityBestEffort), rel(ReliabilityBestAvailable), Ok, "", PolicyNone},

		// Durability warnings.
		{"durability both unknown", dur(DurabilityUnknown), dur(DurabilityUnknown), Warning,
			"WARNING: Publisher durability is unknown and subscription durability is unknown;", PolicyNone},
		{"durability system_default/transient_local", dur(DurabilitySystemDefault), dur(DurabilityTransientLocal), Warning,
			"WARNING: Transient local subscription, but publisher is system_default;", PolicyNone},
		{"durability volatile/system_default", dur(DurabilityVolatile), dur(DurabilitySystemDefault), Warning,
			"WARNING: Volatile publisher, but subscription is system_default;", PolicyNone},
		{"durability transient_local/system_default", dur(DurabilityTransientLocal), dur(DurabilitySystemDefault), Ok, "", PolicyNone},
		{"durability system_default/volatile", dur(DurabilitySystemDefault), dur(DurabilityVolatile), Ok, "", PolicyNone},

		// Liveliness warnings.
		{"liveliness both system_default", liv(LivelinessSystemDefault), liv(LivelinessSystemDefault), Warning,
			"WARNING: Publisher liveliness is system_default and subscription liveliness is system_default;", PolicyNone},
		{"liveliness unknown/manual", liv(LivelinessUnknown), liv(LivelinessManualByTopic), Warning,
			"WARNING: Subscription's liveliness is manual by topic, but publisher's is unknown;", PolicyNone},
		{"liveliness automatic/system_default", liv(LivelinessAutomatic), liv(LivelinessSystemDefault), Warning,
			"WARNING: Publisher's liveliness is automatic, but subscription's is system_default;", PolicyNone},
		{"liveliness manual/system_default", liv(LivelinessManualByTopic), liv(LivelinessSystemDefault), Ok, "", PolicyNone},

		// Several warnings.
		{"all warnings",
			all(rel(ReliabilitySystemDefault), dur(DurabilitySystemDefault), liv(LivelinessSystemDefault)),
			all(rel(ReliabilityReliable), dur(DurabilityTransientLocal), liv(LivelinessManualByTopic)),
			Warning,
			"WARNING: Reliable subscription, but publisher is system_default;" +
				"WARNING: Transient local subscription, but publisher is system_default;" +
				"WARNING: Subscription's liveliness is manual by topic, but publisher's is system_default;",
			PolicyNone},
	}
	for _, tt := range tests {
		pub, sub := base(), base()
		tt.pub(&pub)
		tt.sub(&sub)
		got, reason := CheckCompatible(pub, sub)
		if got != tt.want || reason != tt.reason {
			t.Errorf("%s: CheckCompatible = %v, %q\n  want %v, %q", tt.name, got, reason, tt.want, tt.reason)
		}
		if p := FirstIncompatiblePolicy(pub, sub); p != tt.policy {
			t.Errorf("%s: FirstIncompatiblePolicy = %v, want %v", tt.name, p, tt.policy)
		}
	}
}

// Every named profile is compatible with itself, and the ROS 2 profiles
// (whose liveliness is system_default) warn only about liveliness.
func TestCheckCompatibleNamed(t *testing.T) {
	for _, n := range Names() {
		p, _ := ByName(n)
		if c, why := CheckCompatible(p.Resolve(), p.Resolve()); c != Ok {
			t.Errorf("%s resolved vs itself: %v %s", n, c, why)
		}
		if c, _ := CheckCompatible(p, p); c == Error {
			t.Errorf("%s vs itself: error", n)
		}
	}
	if c, why := CheckCompatible(SensorData().Resolve(), Default().Resolve()); c != Error ||
		why != "ERROR: Best effort publisher and reliable subscription;" {
		t.Errorf("sensor_data pub vs default sub = %v %q", c, why)
	}
	if c, _ := CheckCompatible(Default().Resolve(), SensorData().Resolve()); c != Ok {
		t.Errorf("default pub vs sensor_data sub = %v", c)
	}
	if c, _ := CheckCompatible(Default().Resolve(), Rosout().Resolve()); c != Error {
		t.Errorf("volatile pub vs rosout sub = %v", c)
	}
}
