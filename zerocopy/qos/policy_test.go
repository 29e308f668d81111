package qos

import (
	"errors"
	"testing"
)

// The numeric values are part of the contract with the C shim: they must equal
// the rmw enums.
func TestEnumValuesMatchRMW(t *testing.T) {
	tests := []struct {
		name      string
		got, want int
	}{
		{"ReliabilitySystemDefault", int(ReliabilitySystemDefault), 0},
		{"ReliabilityReliable", int(ReliabilityReliable), 1},
		{"ReliabilityBestEffort", int(ReliabilityBestEffort), 2},
		{"ReliabilityUnknown", int(ReliabilityUnknown), 3},
		{"ReliabilityBestAvailable", int(ReliabilityBestAvailable), 4},
		{"HistorySystemDefault", int(HistorySystemDefault), 0},
		{"HistoryKeepLast", int(HistoryKeepLast), 1},
		{"HistoryKeepAll", int(HistoryKeepAll), 2},
		{"HistoryUnknown", int(HistoryUnknown), 3},
		{"DurabilitySystemDefault", int(DurabilitySystemDefault), 0},
		{"DurabilityTransientLocal", int(DurabilityTransientLocal), 1},
		{"DurabilityVolatile", int(DurabilityVolatile), 2},
		{"DurabilityUnknown", int(DurabilityUnknown), 3},
		{"DurabilityBestAvailable", int(DurabilityBestAvailable), 4},
		{"LivelinessSystemDefault", int(LivelinessSystemDefault), 0},
		{"LivelinessAutomatic", int(LivelinessAutomatic), 1},
		{"LivelinessManualByTopic", int(LivelinessManualByTopic), 3},
		{"LivelinessUnknown", int(LivelinessUnknown), 4},
		{"LivelinessBestAvailable", int(LivelinessBestAvailable), 5},
		{"Ok", int(Ok), 0},
		{"Warning", int(Warning), 1},
		{"Error", int(Error), 2},
		{"PolicyInvalid", int(PolicyInvalid), 1},
		{"PolicyDurability", int(PolicyDurability), 2},
		{"PolicyDeadline", int(PolicyDeadline), 4},
		{"PolicyLiveliness", int(PolicyLiveliness), 8},
		{"PolicyReliability", int(PolicyReliability), 16},
		{"PolicyHistory", int(PolicyHistory), 32},
		{"PolicyLifespan", int(PolicyLifespan), 64},
		{"PolicyDepth", int(PolicyDepth), 128},
		{"PolicyLivelinessLeaseDuration", int(PolicyLivelinessLeaseDuration), 256},
		{"PolicyAvoidROSNamespaceConventions", int(PolicyAvoidROSNamespaceConventions), 512},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}

func TestPolicyStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{ReliabilitySystemDefault.String(), "system_default"},
		{ReliabilityReliable.String(), "reliable"},
		{ReliabilityBestEffort.String(), "best_effort"},
		{ReliabilityUnknown.String(), "unknown"},
		{ReliabilityBestAvailable.String(), "best_available"},
		{Reliability(9).String(), "Reliability(9)"},
		{HistorySystemDefault.String(), "system_default"},
		{HistoryKeepLast.String(), "keep_last"},
		{HistoryKeepAll.String(), "keep_all"},
		{HistoryUnknown.String(), "unknown"},
		{History(4).String(), "History(4)"},
		{DurabilitySystemDefault.String(), "system_default"},
		{DurabilityTransientLocal.String(), "transient_local"},
		{DurabilityVolatile.String(), "volatile"},
		{DurabilityUnknown.String(), "unknown"},
		{DurabilityBestAvailable.String(), "best_available"},
		{Durability(200).String(), "Durability(200)"},
		{LivelinessSystemDefault.String(), "system_default"},
		{LivelinessAutomatic.String(), "automatic"},
		{Liveliness(2).String(), "manual_by_node"},
		{LivelinessManualByTopic.String(), "manual_by_topic"},
		{LivelinessUnknown.String(), "unknown"},
		{LivelinessBestAvailable.String(), "best_available"},
		{Liveliness(6).String(), "Liveliness(6)"},
		{Ok.String(), "ok"},
		{Warning.String(), "warning"},
		{Error.String(), "error"},
		{Compatibility(3).String(), "Compatibility(3)"},
		{PolicyNone.String(), "none"},
		{PolicyInvalid.String(), "invalid"},
		{PolicyDurability.String(), "durability"},
		{PolicyDeadline.String(), "deadline"},
		{PolicyLiveliness.String(), "liveliness"},
		{PolicyReliability.String(), "reliability"},
		{PolicyHistory.String(), "history"},
		{PolicyLifespan.String(), "lifespan"},
		{PolicyDepth.String(), "depth"},
		{PolicyLivelinessLeaseDuration.String(), "liveliness_lease_duration"},
		{PolicyAvoidROSNamespaceConventions.String(), "avoid_ros_namespace_conventions"},
		{Policy(3).String(), "Policy(0x3)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestParseRoundTrip(t *testing.T) {
	for v := range 256 {
		if r := Reliability(v); r.valid() {
			got, err := ParseReliability(r.String())
			if err != nil || got != r {
				t.Errorf("ParseReliability(%q) = %v, %v", r.String(), got, err)
			}
		}
		if h := History(v); h.valid() {
			got, err := ParseHistory(h.String())
			if err != nil || got != h {
				t.Errorf("ParseHistory(%q) = %v, %v", h.String(), got, err)
			}
		}
		if d := Durability(v); d.valid() {
			got, err := ParseDurability(d.String())
			if err != nil || got != d {
				t.Errorf("ParseDurability(%q) = %v, %v", d.String(), got, err)
			}
		}
		if l := Liveliness(v); l.valid() && l != livelinessManualByNode {
			got, err := ParseLiveliness(l.String())
			if err != nil || got != l {
				t.Errorf("ParseLiveliness(%q) = %v, %v", l.String(), got, err)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		fn   func(string) error
		in   string
	}{
		{"reliability empty", func(s string) error { _, err := ParseReliability(s); return err }, ""},
		{"reliability case", func(s string) error { _, err := ParseReliability(s); return err }, "RELIABLE"},
		{"reliability other", func(s string) error { _, err := ParseReliability(s); return err }, "keep_last"},
		{"history", func(s string) error { _, err := ParseHistory(s); return err }, "keep_first"},
		{"durability", func(s string) error { _, err := ParseDurability(s); return err }, "transient"},
		{"liveliness by node", func(s string) error { _, err := ParseLiveliness(s); return err }, "manual_by_node"},
		{"liveliness", func(s string) error { _, err := ParseLiveliness(s); return err }, "manual"},
		{"liveliness prefix", func(s string) error { _, err := ParseLiveliness(s); return err }, "automatic "},
	}
	for _, tt := range tests {
		err := tt.fn(tt.in)
		if !errors.Is(err, ErrUnknownValue) {
			t.Errorf("%s: Parse(%q) error = %v, want ErrUnknownValue", tt.name, tt.in, err)
		}
	}
}
