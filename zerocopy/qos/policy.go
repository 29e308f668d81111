package qos

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrUnknownValue is returned (wrapped) by the Parse functions when the input
// does not name a value of the policy being parsed.
var ErrUnknownValue = errors.New("qos: unknown policy value")

// Reliability is the reliability policy. Values equal
// rmw_qos_reliability_policy_e.
type Reliability uint8

// Reliability values.
const (
	ReliabilitySystemDefault Reliability = 0
	ReliabilityReliable      Reliability = 1
	ReliabilityBestEffort    Reliability = 2
	ReliabilityUnknown       Reliability = 3
	// ReliabilityBestAvailable asks the middleware to pick reliable or best
	// effort from the endpoints already matched when the endpoint is created.
	ReliabilityBestAvailable Reliability = 4
)

// History is the history policy. Values equal rmw_qos_history_policy_e.
type History uint8

// History values.
const (
	HistorySystemDefault History = 0
	HistoryKeepLast      History = 1
	HistoryKeepAll       History = 2
	HistoryUnknown       History = 3
)

// Durability is the durability policy. Values equal
// rmw_qos_durability_policy_e.
type Durability uint8

// Durability values.
const (
	DurabilitySystemDefault  Durability = 0
	DurabilityTransientLocal Durability = 1
	DurabilityVolatile       Durability = 2
	DurabilityUnknown        Durability = 3
	// DurabilityBestAvailable asks the middleware to pick transient local or
	// volatile from the endpoints already matched.
	DurabilityBestAvailable Durability = 4
)

// Liveliness is the liveliness policy. Values equal
// rmw_qos_liveliness_policy_e.
type Liveliness uint8

// Liveliness values. Value 2 (RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_NODE) is
// deprecated in ROS 2 and has no constant here; Profile.Validate rejects it and
// Liveliness(2).String() reports it as "manual_by_node".
const (
	LivelinessSystemDefault Liveliness = 0
	LivelinessAutomatic     Liveliness = 1
	LivelinessManualByTopic Liveliness = 3
	LivelinessUnknown       Liveliness = 4
	// LivelinessBestAvailable asks the middleware to pick manual by topic or
	// automatic from the endpoints already matched.
	LivelinessBestAvailable Liveliness = 5
)

// livelinessManualByNode is the deprecated value 2. It is kept private so
// nobody can select it by name, but String and Validate must recognise it.
const livelinessManualByNode Liveliness = 2

// Names as produced by rmw_qos_*_policy_to_str. ROS 2 returns NULL for the
// UNKNOWN values; "unknown" is used here so String never returns "".
var (
	reliabilityNames = [...]string{"system_default", "reliable", "best_effort", "unknown", "best_available"}
	historyNames     = [...]string{"system_default", "keep_last", "keep_all", "unknown"}
	durabilityNames  = [...]string{"system_default", "transient_local", "volatile", "unknown", "best_available"}
	livelinessNames  = [...]string{"system_default", "automatic", "manual_by_node", "manual_by_topic", "unknown", "best_available"}
)

func name(names []string, v uint8, typ string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(int(v)) + ")"
}

func parse(names []string, s, typ string) (uint8, error) {
	for i, n := range names {
		if n == s {
			return uint8(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %s %q", ErrUnknownValue, typ, s)
}

// String returns the ROS 2 name, e.g. "best_effort"; out-of-range values
// print as "Reliability(N)".
func (r Reliability) String() string { return name(reliabilityNames[:], uint8(r), "Reliability") }

// String returns the ROS 2 name, e.g. "keep_last".
func (h History) String() string { return name(historyNames[:], uint8(h), "History") }

// String returns the ROS 2 name, e.g. "transient_local".
func (d Durability) String() string { return name(durabilityNames[:], uint8(d), "Durability") }

// String returns the ROS 2 name, e.g. "manual_by_topic".
func (l Liveliness) String() string { return name(livelinessNames[:], uint8(l), "Liveliness") }

// valid reports whether the value is one of the enumerators (including
// Unknown), i.e. something a C rmw_qos_profile_t could hold.
func (r Reliability) valid() bool { return int(r) < len(reliabilityNames) }
func (h History) valid() bool     { return int(h) < len(historyNames) }
func (d Durability) valid() bool  { return int(d) < len(durabilityNames) }
func (l Liveliness) valid() bool  { return int(l) < len(livelinessNames) }

// ParseReliability parses a name as printed by Reliability.String
// ("system_default", "reliable", "best_effort", "unknown", "best_available").
// Unlike rmw_qos_reliability_policy_from_str, which maps any unrecognised
// input to UNKNOWN, it returns an error wrapping ErrUnknownValue.
func ParseReliability(s string) (Reliability, error) {
	v, err := parse(reliabilityNames[:], s, "reliability")
	return Reliability(v), err
}

// ParseHistory parses a name as printed by History.String.
func ParseHistory(s string) (History, error) {
	v, err := parse(historyNames[:], s, "history")
	return History(v), err
}

// ParseDurability parses a name as printed by Durability.String.
func ParseDurability(s string) (Durability, error) {
	v, err := parse(durabilityNames[:], s, "durability")
	return Durability(v), err
}

// ParseLiveliness parses a name as printed by Liveliness.String. The
// deprecated "manual_by_node" is refused, as ROS 2's parser does.
func ParseLiveliness(s string) (Liveliness, error) {
	if s == livelinessNames[livelinessManualByNode] {
		return 0, fmt.Errorf("%w: liveliness %q is deprecated, use manual_by_topic", ErrUnknownValue, s)
	}
	v, err := parse(livelinessNames[:], s, "liveliness")
	return Liveliness(v), err
}
