// Package names validates and transforms ROS 2 graph names: topic and
// service names, node names and namespaces.
//
// The package owns:
//
//   - validation with the rules of rmw_validate_full_topic_name,
//     rmw_validate_node_name and rmw_validate_namespace (ValidateFullTopicName,
//     ValidateNodeName, ValidateNamespace), and of rcl_validate_topic_name for
//     names that are not yet expanded (ValidateTopicName);
//   - expansion of relative, private ("~") and substitution ("{node}", "{ns}",
//     "{namespace}") names into fully qualified names, as
//     rcl_expand_topic_name does (ExpandTopicName);
//   - a reversible mapping between fully qualified topic names and strings
//     that can be embedded in POSIX shared-memory object names (ShmSafe,
//     FromShmSafe);
//   - the hidden-name convention (IsHidden);
//   - fully qualified node names, joined and split (FullNodeName,
//     SplitFullNodeName).
//
// Service names obey exactly the topic-name rules; use the topic functions
// for them.
//
// Every validation failure is a *Error, which carries the offending name, the
// byte index of the problem (as the rmw functions report it) and a reason,
// and matches ErrInvalidName with errors.Is. Names are treated as bytes, as
// the C functions do; any non-ASCII byte is an invalid character.
//
// Everything here is pure computation, safe for concurrent use.
package names
