// Package qos models ROS 2 quality-of-service settings as plain Go data.
//
// The package owns:
//
//   - the policy enumerations (History, Reliability, Durability, Liveliness)
//     whose numeric values are identical to the rmw_qos_*_policy_e enums, so a
//     value can cross the C boundary by plain integer conversion;
//   - Profile, the Go counterpart of rmw_qos_profile_t, together with the
//     named profiles that rmw, rcl and rclcpp define (Default, SensorData, ...);
//   - the rules that decide what a profile means in this middleware
//     (Profile.Resolve, Profile.Validate, the best-available helpers);
//   - the publisher/subscription compatibility check (CheckCompatible,
//     FirstIncompatiblePolicy), which follows rmw_qos_profile_check_compatible;
//   - a fixed-size, versioned binary form (Profile.Encode, Decode) that the
//     engine stores in shared-memory endpoint slots.
//
// Durations use time.Duration with 0 meaning "not set", which in this
// middleware is the same as infinite. ROS 2 itself distinguishes
// RMW_DURATION_UNSPECIFIED from RMW_DURATION_INFINITE; the C shim maps both to
// 0. DurationBestAvailable stands in for RMW_QOS_DEADLINE_BEST_AVAILABLE and
// RMW_QOS_LIVELINESS_LEASE_DURATION_BEST_AVAILABLE.
//
// Everything here is pure computation: no I/O, no shared state, safe for
// concurrent use.
package qos
