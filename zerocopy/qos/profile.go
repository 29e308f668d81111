package qos

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrInvalid is returned (wrapped) by Profile.Validate. The wrapping message
// names the offending field.
var ErrInvalid = errors.New("qos: invalid profile")

// ErrUnknownProfile is returned (wrapped) by ByName for a name that is not a
// known profile.
var ErrUnknownProfile = errors.New("qos: unknown profile name")

// DurationBestAvailable is the Deadline or LivelinessLease value that asks
// the middleware to choose the duration from the matched endpoints. It has the
// same value as RMW_QOS_DEADLINE_BEST_AVAILABLE and
// RMW_QOS_LIVELINESS_LEASE_DURATION_BEST_AVAILABLE (RMW_DURATION_INFINITE
// minus one nanosecond), so CheckCompatible treats it exactly as ROS 2 does:
// as a very long but finite duration.
const DurationBestAvailable = time.Duration(math.MaxInt64 - 1)

// SystemDefaultDepth is the KEEP_LAST depth this middleware uses when a
// profile leaves the history policy to the system (HistorySystemDefault with
// Depth 0, as in SystemDefault()). It equals the depth of Default(), so that
// "system default" means the same thing as ROS 2's default profile.
const SystemDefaultDepth = 10

// Profile is a complete set of QoS policies for one endpoint, the Go form of
// rmw_qos_profile_t. The zero value is SystemDefault().
//
// Durations are 0 when not set, which this middleware treats as infinite
// (no deadline, messages never expire, liveliness not enforced).
type Profile struct {
	History History
	// Depth is the queue depth for HistoryKeepLast; ignored for KeepAll.
	Depth       uint32
	Reliability Reliability
	Durability  Durability
	// Deadline is the expected maximum period between messages; 0 = none.
	Deadline time.Duration
	// Lifespan is how long a message stays deliverable; 0 = forever.
	Lifespan   time.Duration
	Liveliness Liveliness
	// LivelinessLease is the liveliness lease duration; 0 = infinite.
	LivelinessLease time.Duration
	// AvoidROSNamespaceConventions mirrors the rmw flag. This middleware does
	// not mangle names, so the flag is carried for introspection only.
	AvoidROSNamespaceConventions bool
}

// Default returns rmw_qos_profile_default: keep_last(10), reliable, volatile.
func Default() Profile {
	return Profile{History: HistoryKeepLast, Depth: 10, Reliability: ReliabilityReliable, Durability: DurabilityVolatile}
}

// SensorData returns rmw_qos_profile_sensor_data: keep_last(5), best_effort,
// volatile.
func SensorData() Profile {
	return Profile{History: HistoryKeepLast, Depth: 5, Reliability: ReliabilityBestEffort, Durability: DurabilityVolatile}
}

// ServicesDefault returns rmw_qos_profile_services_default: keep_last(10),
// reliable, volatile.
func ServicesDefault() Profile { return Default() }

// ParameterEvents returns rmw_qos_profile_parameter_events: keep_last(1000),
// reliable, volatile.
func ParameterEvents() Profile {
	p := Default()
	p.Depth = 1000
	return p
}

// Parameters returns rmw_qos_profile_parameters: keep_last(1000), reliable,
// volatile.
func Parameters() Profile { return ParameterEvents() }

// SystemDefault returns rmw_qos_profile_system_default: every policy left to
// the middleware (see Profile.Resolve).
func SystemDefault() Profile { return Profile{} }

// Rosout returns rcl_qos_profile_rosout_default: keep_last(1000), reliable,
// transient_local, lifespan 10 s.
func Rosout() Profile {
	return Profile{
		History: HistoryKeepLast, Depth: 1000,
		Reliability: ReliabilityReliable, Durability: DurabilityTransientLocal,
		Lifespan: 10 * time.Second,
	}
}

// Clock returns rclcpp's ClockQoS: keep_last(1), best_effort, volatile.
func Clock() Profile {
	return Profile{History: HistoryKeepLast, Depth: 1, Reliability: ReliabilityBestEffort, Durability: DurabilityVolatile}
}

// ActionStatusDefault returns rcl_action_qos_profile_status_default:
// keep_last(1), reliable, transient_local.
func ActionStatusDefault() Profile {
	return Profile{History: HistoryKeepLast, Depth: 1, Reliability: ReliabilityReliable, Durability: DurabilityTransientLocal}
}

// BestAvailable returns rmw_qos_profile_best_available: keep_last(10) with
// reliability, durability, deadline, liveliness and lease chosen from the
// matched endpoints.
func BestAvailable() Profile {
	return Profile{
		History: HistoryKeepLast, Depth: 10,
		Reliability: ReliabilityBestAvailable, Durability: DurabilityBestAvailable,
		Deadline: DurationBestAvailable, Liveliness: LivelinessBestAvailable,
		LivelinessLease: DurationBestAvailable,
	}
}

type namedProfile struct {
	name string
	fn   func() Profile
}

// named lists the profiles ByName knows, in the order Names reports them.
var named = []namedProfile{
	{"default", Default},
	{"sensor_data", SensorData},
	{"services_default", ServicesDefault},
	{"parameter_events", ParameterEvents},
	{"parameters", Parameters},
	{"system_default", SystemDefault},
	{"rosout", Rosout},
	{"clock", Clock},
	{"action_status_default", ActionStatusDefault},
	{"best_available", BestAvailable},
}

// Names returns the canonical profile names accepted by ByName, in a fixed
// order. The caller owns the returned slice.
func Names() []string {
	out := make([]string, len(named))
	for i, n := range named {
		out[i] = n.name
	}
	return out
}

// ByName returns the profile with the given name. It accepts the names from
// Names, and the same names with the rclpy/rmw prefix "qos_profile_" (e.g.
// "qos_profile_sensor_data"); "rosout_default" and "qos_profile_rosout_default"
// name Rosout as rcl does. Matching is exact (case-sensitive). Unknown names
// give an error wrapping ErrUnknownProfile.
func ByName(name string) (Profile, error) {
	n := strings.TrimPrefix(name, "qos_profile_")
	if n == "rosout_default" {
		n = "rosout"
	}
	i := slices.IndexFunc(named, func(e namedProfile) bool { return e.name == n })
	if i < 0 {
		return Profile{}, fmt.Errorf("%w: %q", ErrUnknownProfile, name)
	}
	return named[i].fn(), nil
}

// Resolve replaces every policy that is left to the middleware by the
// concrete value this middleware uses, so that the result can be compared,
// stored and acted upon without further interpretation:
//
//   - history system_default → keep_last; if Depth is 0 it becomes
//     SystemDefaultDepth. An explicit keep_last with Depth 0 is left alone
//     (Validate rejects it).
//   - reliability system_default → reliable
//   - durability system_default → volatile
//   - liveliness system_default → automatic
//
// Best-available policies are meant to be resolved against the matched
// endpoints first (BestAvailableForSubscription, BestAvailableForPublisher).
// Whatever is still best-available when Resolve runs is mapped to the value
// that a subscription can always match with: reliability best_effort,
// durability volatile, liveliness automatic, and no deadline or lease (0).
// For a publisher, call BestAvailableForPublisher first, since this fallback
// is the least, not the most, a publisher can offer.
//
// Unknown and out-of-range values are kept, so Validate can report them.
func (p Profile) Resolve() Profile {
	if p.History == HistorySystemDefault {
		p.History = HistoryKeepLast
		if p.Depth == 0 {
			p.Depth = SystemDefaultDepth
		}
	}
	switch p.Reliability {
	case ReliabilitySystemDefault:
		p.Reliability = ReliabilityReliable
	case ReliabilityBestAvailable:
		p.Reliability = ReliabilityBestEffort
	}
	switch p.Durability {
	case DurabilitySystemDefault, DurabilityBestAvailable:
		p.Durability = DurabilityVolatile
	}
	switch p.Liveliness {
	case LivelinessSystemDefault, LivelinessBestAvailable:
		p.Liveliness = LivelinessAutomatic
	}
	if p.Deadline == DurationBestAvailable {
		p.Deadline = 0
	}
	if p.LivelinessLease == DurationBestAvailable {
		p.LivelinessLease = 0
	}
	return p
}

// HasBestAvailable reports whether any policy of p asks to be chosen from the
// matched endpoints.
func (p Profile) HasBestAvailable() bool {
	return p.Reliability == ReliabilityBestAvailable ||
		p.Durability == DurabilityBestAvailable ||
		p.Liveliness == LivelinessBestAvailable ||
		p.Deadline == DurationBestAvailable ||
		p.LivelinessLease == DurationBestAvailable
}

// BestAvailableForSubscription resolves the best-available policies of a
// subscription profile p against the publishers currently matched on the
// topic, with the rules of rmw_dds_common's
// qos_profile_get_best_available_for_subscription:
//
//   - reliable only if every publisher is reliable, else best_effort;
//   - transient_local only if every publisher is transient_local, else
//     volatile;
//   - manual_by_topic only if every publisher is manual_by_topic, else
//     automatic;
//   - deadline and lease: the largest set value among the publishers, or
//     unset (0) if no publisher sets one.
//
// As in ROS 2, "every publisher" is vacuously true with no publishers, which
// yields the strongest request, and a deadline or lease taken from one
// publisher does not match another publisher that sets none. Policies that
// are not best-available are returned unchanged.
func (p Profile) BestAvailableForSubscription(pubs []Profile) Profile {
	allReliable, allTransient, allManual := true, true, true
	var maxDeadline, maxLease time.Duration
	for _, q := range pubs {
		allReliable = allReliable && q.Reliability == ReliabilityReliable
		allTransient = allTransient && q.Durability == DurabilityTransientLocal
		allManual = allManual && q.Liveliness == LivelinessManualByTopic
		maxDeadline = max(maxDeadline, q.Deadline)
		maxLease = max(maxLease, q.LivelinessLease)
	}
	if p.Reliability == ReliabilityBestAvailable {
		p.Reliability = pick(allReliable, ReliabilityReliable, ReliabilityBestEffort)
	}
	if p.Durability == DurabilityBestAvailable {
		p.Durability = pick(allTransient, DurabilityTransientLocal, DurabilityVolatile)
	}
	if p.Liveliness == LivelinessBestAvailable {
		p.Liveliness = pick(allManual, LivelinessManualByTopic, LivelinessAutomatic)
	}
	if p.Deadline == DurationBestAvailable {
		p.Deadline = maxDeadline
	}
	if p.LivelinessLease == DurationBestAvailable {
		p.LivelinessLease = maxLease
	}
	return p
}

// BestAvailableForPublisher resolves the best-available policies of a
// publisher profile p against the subscriptions currently matched on the
// topic, with the rules of rmw_dds_common's
// qos_profile_get_best_available_for_publisher:
//
//   - reliability reliable and durability transient_local always, since they
//     match every subscription;
//   - manual_by_topic if at least one subscription requests it, else
//     automatic;
//   - deadline and lease: the smallest set value among the subscriptions, or
//     unset (0) if no subscription sets one.
//
// Policies that are not best-available are returned unchanged.
func (p Profile) BestAvailableForPublisher(subs []Profile) Profile {
	anyManual := false
	var minDeadline, minLease time.Duration
	for _, q := range subs {
		anyManual = anyManual || q.Liveliness == LivelinessManualByTopic
		minDeadline = minSet(minDeadline, q.Deadline)
		minLease = minSet(minLease, q.LivelinessLease)
	}
	if p.Reliability == ReliabilityBestAvailable {
		p.Reliability = ReliabilityReliable
	}
	if p.Durability == DurabilityBestAvailable {
		p.Durability = DurabilityTransientLocal
	}
	if p.Liveliness == LivelinessBestAvailable {
		p.Liveliness = pick(anyManual, LivelinessManualByTopic, LivelinessAutomatic)
	}
	if p.Deadline == DurationBestAvailable {
		p.Deadline = minDeadline
	}
	if p.LivelinessLease == DurationBestAvailable {
		p.LivelinessLease = minLease
	}
	return p
}

func pick[T any](cond bool, a, b T) T {
	if cond {
		return a
	}
	return b
}

// minSet returns the smaller of two durations where 0 means "unset" and
// therefore never wins over a set value.
func minSet(cur, d time.Duration) time.Duration {
	if d == 0 {
		return cur
	}
	if cur == 0 || d < cur {
		return d
	}
	return cur
}

// Validate reports whether p can be used to create an endpoint. It accepts
// system_default and best_available policies (see Resolve) and rejects:
//
//   - out-of-range and "unknown" policy values;
//   - keep_last history with Depth 0;
//   - the deprecated manual_by_node liveliness (value 2);
//   - negative durations.
//
// The error wraps ErrInvalid and names the first offending field.
func (p Profile) Validate() error {
	switch {
	case !p.History.valid() || p.History == HistoryUnknown:
		return invalid("history", "unsupported value %s", p.History)
	case p.History == HistoryKeepLast && p.Depth == 0:
		return invalid("depth", "must be at least 1 with keep_last history")
	case !p.Reliability.valid() || p.Reliability == ReliabilityUnknown:
		return invalid("reliability", "unsupported value %s", p.Reliability)
	case !p.Durability.valid() || p.Durability == DurabilityUnknown:
		return invalid("durability", "unsupported value %s", p.Durability)
	case p.Liveliness == livelinessManualByNode:
		return invalid("liveliness", "manual_by_node is deprecated, use manual_by_topic")
	case !p.Liveliness.valid() || p.Liveliness == LivelinessUnknown:
		return invalid("liveliness", "unsupported value %s", p.Liveliness)
	case p.Deadline < 0:
		return invalid("deadline", "must not be negative (%s)", p.Deadline)
	case p.Lifespan < 0:
		return invalid("lifespan", "must not be negative (%s)", p.Lifespan)
	case p.LivelinessLease < 0:
		return invalid("liveliness lease", "must not be negative (%s)", p.LivelinessLease)
	}
	return nil
}

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

// String returns a compact single-line description for humans, e.g.
//
//	reliable, keep_last(10), volatile, deadline=inf, lifespan=inf, liveliness=automatic(lease=inf)
//
// The format is not meant to be parsed.
func (p Profile) String() string {
	var b strings.Builder
	b.WriteString(p.Reliability.String())
	b.WriteString(", ")
	b.WriteString(p.History.String())
	if p.History == HistoryKeepLast || p.Depth != 0 {
		b.WriteString("(" + strconv.FormatUint(uint64(p.Depth), 10) + ")")
	}
	b.WriteString(", ")
	b.WriteString(p.Durability.String())
	b.WriteString(", deadline=" + durationString(p.Deadline))
	b.WriteString(", lifespan=" + durationString(p.Lifespan))
	b.WriteString(", liveliness=" + p.Liveliness.String())
	b.WriteString("(lease=" + durationString(p.LivelinessLease) + ")")
	if p.AvoidROSNamespaceConventions {
		b.WriteString(", avoid_ros_namespace_conventions")
	}
	return b.String()
}

func durationString(d time.Duration) string {
	switch d {
	case 0:
		return "inf"
	case DurationBestAvailable:
		return "best_available"
	}
	return d.String()
}
