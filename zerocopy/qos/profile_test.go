package qos

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNamedProfiles(t *testing.T) {
	keepLast := func(depth uint32, r Reliability, d Durability) Profile {
		return Profile{History: HistoryKeepLast, Depth: depth, Reliability: r, Durability: d}
	}
	rosout := keepLast(1000, ReliabilityReliable, DurabilityTransientLocal)
	rosout.Lifespan = 10 * time.Second
	tests := []struct {
		name string
		got  Profile
		want Profile
	}{
		{"default", Default(), keepLast(10, ReliabilityReliable, DurabilityVolatile)},
		{"sensor_data", SensorData(), keepLast(5, ReliabilityBestEffort, DurabilityVolatile)},
		{"services_default", ServicesDefault(), keepLast(10, ReliabilityReliable, DurabilityVolatile)},
		{"parameter_events", ParameterEvents(), keepLast(1000, ReliabilityReliable, DurabilityVolatile)},
		{"parameters", Parameters(), keepLast(1000, ReliabilityReliable, DurabilityVolatile)},
		{"system_default", SystemDefault(), Profile{}},
		{"rosout", Rosout(), rosout},
		{"clock", Clock(), keepLast(1, ReliabilityBestEffort, DurabilityVolatile)},
		{"action_status_default", ActionStatusDefault(), keepLast(1, ReliabilityReliable, DurabilityTransientLocal)},
		{"best_available", BestAvailable(), Profile{
			History: HistoryKeepLast, Depth: 10,
			Reliability: ReliabilityBestAvailable, Durability: DurabilityBestAvailable,
			Deadline: DurationBestAvailable, Liveliness: LivelinessBestAvailable,
			LivelinessLease: DurationBestAvailable,
		}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %+v, want %+v", tt.name, tt.got, tt.want)
		}
		for _, n := range []string{tt.name, "qos_profile_" + tt.name} {
			p, err := ByName(n)
			if err != nil || p != tt.want {
				t.Errorf("ByName(%q) = %+v, %v; want %+v", n, p, err, tt.want)
			}
		}
		if err := tt.got.Validate(); err != nil {
			t.Errorf("%s.Validate() = %v", tt.name, err)
		}
		if err := tt.got.Resolve().Validate(); err != nil {
			t.Errorf("%s.Resolve().Validate() = %v", tt.name, err)
		}
	}
	if !slices.Equal(Names(), []string{
		"default", "sensor_data", "services_default", "parameter_events", "parameters",
		"system_default", "rosout", "clock", "action_status_default", "best_available",
	}) {
		t.Errorf("Names() = %v", Names())
	}
	for _, n := range Names() {
		if _, err := ByName(n); err != nil {
			t.Errorf("ByName(%q) from Names: %v", n, err)
		}
	}
	for _, n := range []string{"rosout_default", "qos_profile_rosout_default"} {
		if p, err := ByName(n); err != nil || p != Rosout() {
			t.Errorf("ByName(%q) = %+v, %v", n, p, err)
		}
	}
}

func TestNamesReturnsCopy(t *testing.T) {
	n := Names()
	n[0] = "mutated"
	if Names()[0] != "default" {
		t.Fatal("Names exposes internal state")
	}
}

func TestByNameUnknown(t *testing.T) {
	for _, n := range []string{"", "Default", "qos_profile_", "sensor", "qos_profile_qos_profile_default", " default"} {
		if _, err := ByName(n); !errors.Is(err, ErrUnknownProfile) {
			t.Errorf("ByName(%q) error = %v, want ErrUnknownProfile", n, err)
		}
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name string
		in   Profile
		want Profile
	}{
		{
			name: "system default",
			in:   SystemDefault(),
			want: Profile{History: HistoryKeepLast, Depth: SystemDefaultDepth, Reliability: ReliabilityReliable,
				Durability: DurabilityVolatile, Liveliness: LivelinessAutomatic},
		},
		{
			name: "system default history keeps explicit depth",
			in:   Profile{Depth: 3},
			want: Profile{History: HistoryKeepLast, Depth: 3, Reliability: ReliabilityReliable,
				Durability: DurabilityVolatile, Liveliness: LivelinessAutomatic},
		},
		{
			name: "keep_last depth 0 left for Validate",
			in:   Profile{History: HistoryKeepLast},
			want: Profile{History: HistoryKeepLast, Reliability: ReliabilityReliable,
				Durability: DurabilityVolatile, Liveliness: LivelinessAutomatic},
		},
		{
			name: "concrete values unchanged",
			in: Profile{History: HistoryKeepAll, Depth: 7, Reliability: ReliabilityBestEffort,
				Durability: DurabilityTransientLocal, Deadline: time.Second, Lifespan: 2 * time.Second,
				Liveliness: LivelinessManualByTopic, LivelinessLease: 3 * time.Second, AvoidROSNamespaceConventions: true},
			want: Profile{History: HistoryKeepAll, Depth: 7, Reliability: ReliabilityBestEffort,
				Durability: DurabilityTransientLocal, Deadline: time.Second, Lifespan: 2 * time.Second,
				Liveliness: LivelinessManualByTopic, LivelinessLease: 3 * time.Second, AvoidROSNamespaceConventions: true},
		},
		{
			name: "best available falls back to what any subscription matches",
			in:   BestAvailable(),
			want: Profile{History: HistoryKeepLast, Depth: 10, Reliability: ReliabilityBestEffort,
				Durability: DurabilityVolatile, Liveliness: LivelinessAutomatic},
		},
		{
			name: "unknown kept",
			in: Profile{History: HistoryUnknown, Reliability: ReliabilityUnknown,
				Durability: DurabilityUnknown, Liveliness: LivelinessUnknown},
			want: Profile{History: HistoryUnknown, Reliability: ReliabilityUnknown,
				Durability: DurabilityUnknown, Liveliness: LivelinessUnknown},
		},
	}
	for _, tt := range tests {
		got := tt.in.Resolve()
		if got != tt.want {
			t.Errorf("%s: Resolve() = %+v, want %+v", tt.name, got, tt.want)
		}
		if got.Resolve() != got {
			t.Errorf("%s: Resolve is not idempotent", tt.name)
		}
		if got.HasBestAvailable() {
			t.Errorf("%s: Resolve left a best-available policy", tt.name)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Default()
	with := func(f func(*Profile)) Profile {
		p := ok
		f(&p)
		return p
	}
	tests := []struct {
		name  string
		p     Profile
		field string // "" = valid
	}{
		{"default", ok, ""},
		{"system default", SystemDefault(), ""},
		{"best available", BestAvailable(), ""},
		{"keep_all depth 0", with(func(p *Profile) { p.History, p.Depth = HistoryKeepAll, 0 }), ""},
		{"system default history depth 0", with(func(p *Profile) { p.History, p.Depth = HistorySystemDefault, 0 }), ""},
		{"max durations", with(func(p *Profile) {
			p.Deadline, p.Lifespan, p.LivelinessLease = 1<<62, 1<<62, 1<<62
		}), ""},
		{"manual by topic", with(func(p *Profile) { p.Liveliness = LivelinessManualByTopic }), ""},
		{"keep_last depth 0", with(func(p *Profile) { p.Depth = 0 }), "depth"},
		{"history unknown", with(func(p *Profile) { p.History = HistoryUnknown }), "history"},
		{"history out of range", with(func(p *Profile) { p.History = 4 }), "history"},
		{"reliability unknown", with(func(p *Profile) { p.Reliability = ReliabilityUnknown }), "reliability"},
		{"reliability out of range", with(func(p *Profile) { p.Reliability = 5 }), "reliability"},
		{"durability unknown", with(func(p *Profile) { p.Durability = DurabilityUnknown }), "durability"},
		{"durability out of range", with(func(p *Profile) { p.Durability = 255 }), "durability"},
		{"liveliness manual by node", with(func(p *Profile) { p.Liveliness = 2 }), "liveliness: manual_by_node"},
		{"liveliness unknown", with(func(p *Profile) { p.Liveliness = LivelinessUnknown }), "liveliness"},
		{"liveliness out of range", with(func(p *Profile) { p.Liveliness = 6 }), "liveliness"},
		{"negative deadline", with(func(p *Profile) { p.Deadline = -1 }), "deadline"},
		{"negative lifespan", with(func(p *Profile) { p.Lifespan = -time.Second }), "lifespan"},
		{"negative lease", with(func(p *Profile) { p.LivelinessLease = -5 }), "liveliness lease"},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		if tt.field == "" {
			if err != nil {
				t.Errorf("%s: Validate() = %v, want nil", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate() = %v, want ErrInvalid", tt.name, err)
			continue
		}
		if !strings.Contains(err.Error(), ": "+tt.field) {
			t.Errorf("%s: Validate() = %q, want it to name %q", tt.name, err, tt.field)
		}
	}
}

func TestProfileString(t *testing.T) {
	tests := []struct {
		p    Profile
		want string
	}{
		{Default().Resolve(), "reliable, keep_last(10), volatile, deadline=inf, lifespan=inf, liveliness=automatic(lease=inf)"},
		{Default(), "reliable, keep_last(10), volatile, deadline=inf, lifespan=inf, liveliness=system_default(lease=inf)"},
		{SystemDefault(), "system_default, system_default, system_default, deadline=inf, lifespan=inf, liveliness=system_default(lease=inf)"},
		{Rosout(), "reliable, keep_last(1000), transient_local, deadline=inf, lifespan=10s, liveliness=system_default(lease=inf)"},
		{BestAvailable(), "best_available, keep_last(10), best_available, deadline=best_available, lifespan=inf, liveliness=best_available(lease=best_available)"},
		{Profile{History: HistoryKeepAll, Reliability: ReliabilityBestEffort, Durability: DurabilityVolatile,
			Deadline: 100 * time.Millisecond, Liveliness: LivelinessManualByTopic, LivelinessLease: time.Second,
			AvoidROSNamespaceConventions: true},
			"best_effort, keep_all, volatile, deadline=100ms, lifespan=inf, liveliness=manual_by_topic(lease=1s), avoid_ros_namespace_conventions"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() =\n  %q\nwant\n  %q", got, tt.want)
		}
	}
}

func TestBestAvailableForSubscription(t *testing.T) {
	reliableTL := Profile{History: HistoryKeepLast, Depth: 1, Reliability: ReliabilityReliable,
		Durability: DurabilityTransientLocal, Liveliness: LivelinessManualByTopic,
		Deadline: time.Second, LivelinessLease: 2 * time.Second}
	beVol := Profile{History: HistoryKeepLast, Depth: 1, Reliability: ReliabilityBestEffort,
		Durability: DurabilityVolatile, Liveliness: LivelinessAutomatic, Deadline: 3 * time.Second}
	tests := []struct {
		name string
		pubs []Profile
		want Profile
	}{
		{"no publishers: strongest", nil, Profile{History: HistoryKeepLast, Depth: 10,
			Reliability: ReliabilityReliable, Durability: DurabilityTransientLocal, Liveliness: LivelinessManualByTopic}},
		{"all strong", []Profile{reliableTL, reliableTL}, Profile{History: HistoryKeepLast, Depth: 10,
			Reliability: ReliabilityReliable, Durability: DurabilityTransientLocal, Liveliness: LivelinessManualByTopic,
			Deadline: time.Second, LivelinessLease: 2 * time.Second}},
		{"one weak", []Profile{reliableTL, beVol}, Profile{History: HistoryKeepLast, Depth: 10,
			Reliability: ReliabilityBestEffort, Durability: DurabilityVolatile, Liveliness: LivelinessAutomatic,
			Deadline: 3 * time.Second, LivelinessLease: 2 * time.Second}},
		{"system default publisher is not reliable", []Profile{SystemDefault()}, Profile{History: HistoryKeepLast, Depth: 10,
			Reliability: ReliabilityBestEffort, Durability: DurabilityVolatile, Liveliness: LivelinessAutomatic}},
	}
	for _, tt := range tests {
		got := BestAvailable().BestAvailableForSubscription(tt.pubs)
		if got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
	// As in ROS 2, a duration taken from one publisher can conflict with
	// another publisher that sets none; the rule is kept as is.
	got := BestAvailable().BestAvailableForSubscription([]Profile{reliableTL, beVol})
	if c, _ := CheckCompatible(beVol, got); c != Error {
		t.Errorf("expected the ROS 2 lease quirk to give an error, got %v", c)
	}
	if c, _ := CheckCompatible(reliableTL, got); c != Ok {
		t.Errorf("chosen profile should match the publisher it came from, got %v", c)
	}
	// Non-best-available policies are left alone.
	if got := Default().BestAvailableForSubscription([]Profile{SensorData()}); got != Default() {
		t.Errorf("concrete profile changed: %+v", got)
	}
}

func TestBestAvailableForPublisher(t *testing.T) {
	manual := Profile{History: HistoryKeepLast, Depth: 1, Reliability: ReliabilityReliable,
		Durability: DurabilityTransientLocal, Liveliness: LivelinessManualByTopic,
		Deadline: 3 * time.Second, LivelinessLease: 2 * time.Second}
	auto := Profile{History: HistoryKeepLast, Depth: 1, Reliability: ReliabilityBestEffort,
		Durability: DurabilityVolatile, Liveliness: LivelinessAutomatic, Deadline: time.Second}
	base := Profile{History: HistoryKeepLast, Depth: 10, Reliability: ReliabilityReliable,
		Durability: DurabilityTransientLocal, Liveliness: LivelinessAutomatic}
	tests := []struct {
		name string
		subs []Profile
		want Profile
	}{
		{"no subscriptions", nil, base},
		{"automatic only", []Profile{auto, SystemDefault()}, func() Profile {
			p := base
			p.Deadline = time.Second
			return p
		}()},
		{"one manual", []Profile{auto, manual}, func() Profile {
			p := base
			p.Liveliness, p.Deadline, p.LivelinessLease = LivelinessManualByTopic, time.Second, 2*time.Second
			return p
		}()},
	}
	for _, tt := range tests {
		got := BestAvailable().BestAvailableForPublisher(tt.subs)
		if got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
		for _, sub := range tt.subs {
			if c, why := CheckCompatible(got, sub.Resolve()); c != Ok {
				t.Errorf("%s: chosen profile not compatible with %v: %s", tt.name, sub, why)
			}
		}
	}
	if got := SensorData().BestAvailableForPublisher([]Profile{Default()}); got != SensorData() {
		t.Errorf("concrete profile changed: %+v", got)
	}
}
