/*
 * The part of the ROS 2 rmw ABI (Jazzy, x86-64 LP64) that librmw_rgaps
 * implements, declared by this project from the facts in RMW_NOTES.md:
 * rcutils' allocator and arrays, rmw's handles, QoS, events and graph
 * structures, and the prototypes of every rmw_* function the library
 * exports. No ROS 2 installation is needed to build against it.
 *
 * Build options:
 *   -DRGAPS_USE_ROS_HEADERS  include the real rmw/rcutils headers instead
 *                            (a ROS 2 workspace); the static assertions at
 *                            the end then check the real headers against
 *                            the numbers this project relies on.
 *   -DRGAPS_ROS_KILTED       Kilted/Rolling: rmw_init_options_t has no
 *                            localhost_only member (160 bytes, not 168).
 *
 * The static assertions at the end are the contract: a size or offset that
 * differs from RMW_NOTES.md fails the build.
 */
#ifndef RGAPS_RMW_ABI_H
#define RGAPS_RMW_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef RGAPS_USE_ROS_HEADERS

#include <rcutils/allocator.h>
#include <rcutils/error_handling.h>
#include <rcutils/types/string_array.h>
#include <rcutils/types/uint8_array.h>
#include <rmw/rmw.h>
#include <rmw/dynamic_message_type_support.h>
#include <rmw/event.h>
#include <rmw/event_callback_type.h>
#include <rmw/events_statuses/events_statuses.h>
#include <rmw/features.h>
#include <rmw/get_network_flow_endpoints.h>
#include <rmw/get_node_info_and_types.h>
#include <rmw/get_service_names_and_types.h>
#include <rmw/get_topic_endpoint_info.h>
#include <rmw/get_topic_names_and_types.h>
#include <rmw/init.h>
#include <rmw/init_options.h>
#include <rmw/qos_profiles.h>

#else /* our own declarations */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- rcutils ------------------------------------------------------------ */

typedef int rcutils_ret_t;
typedef int64_t rcutils_time_point_value_t;
typedef int64_t rcutils_duration_value_t;

typedef struct rcutils_allocator_s {
	void *(*allocate)(size_t size, void *state);
	void (*deallocate)(void *pointer, void *state);
	void *(*reallocate)(void *pointer, size_t size, void *state);
	void *(*zero_allocate)(size_t number_of_elements, size_t size_of_element, void *state);
	void *state;
} rcutils_allocator_t;

typedef struct rcutils_string_array_s {
	size_t size;
	char **data;
	rcutils_allocator_t allocator;
} rcutils_string_array_t;

typedef struct rcutils_uint8_array_s {
	uint8_t *buffer;
	size_t buffer_length;
	size_t buffer_capacity;
	rcutils_allocator_t allocator;
} rcutils_uint8_array_t;

/* ---- rosidl (only what rmw's prototypes name) ---------------------------- */

typedef struct rosidl_message_type_support_t rosidl_message_type_support_t;
typedef struct rosidl_service_type_support_t rosidl_service_type_support_t;
typedef struct rosidl_runtime_c__Sequence__bound rosidl_runtime_c__Sequence__bound;
typedef struct rosidl_dynamic_typesupport_serialization_support_s
	rosidl_dynamic_typesupport_serialization_support_t;
typedef struct rosidl_dynamic_typesupport_dynamic_data_s rosidl_dynamic_typesupport_dynamic_data_t;

typedef struct rosidl_type_hash_s {
	uint8_t version;
	uint8_t value[32];
} rosidl_type_hash_t;

/* ---- rmw: return codes, time, ids --------------------------------------- */

typedef int32_t rmw_ret_t;
#define RMW_RET_OK 0
#define RMW_RET_ERROR 1
#define RMW_RET_TIMEOUT 2
#define RMW_RET_UNSUPPORTED 3
#define RMW_RET_BAD_ALLOC 10
#define RMW_RET_INVALID_ARGUMENT 11
#define RMW_RET_INCORRECT_RMW_IMPLEMENTATION 12
#define RMW_RET_NODE_NAME_NON_EXISTENT 203

#define RMW_GID_STORAGE_SIZE 16u
#define RMW_DEFAULT_DOMAIN_ID SIZE_MAX

typedef struct rmw_time_s {
	uint64_t sec;
	uint64_t nsec;
} rmw_time_t;
typedef rcutils_time_point_value_t rmw_time_point_value_t;
typedef rcutils_duration_value_t rmw_duration_t;
#define RMW_DURATION_INFINITE {9223372036LL, 854775807LL}
#define RMW_DURATION_UNSPECIFIED {0LL, 0LL}

typedef rcutils_uint8_array_t rmw_serialized_message_t;

/* ---- QoS ----------------------------------------------------------------- */

typedef enum rmw_qos_reliability_policy_e {
	RMW_QOS_POLICY_RELIABILITY_SYSTEM_DEFAULT,
	RMW_QOS_POLICY_RELIABILITY_RELIABLE,
	RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT,
	RMW_QOS_POLICY_RELIABILITY_UNKNOWN,
	RMW_QOS_POLICY_RELIABILITY_BEST_AVAILABLE
} rmw_qos_reliability_policy_t;

typedef enum rmw_qos_history_policy_e {
	RMW_QOS_POLICY_HISTORY_SYSTEM_DEFAULT,
	RMW_QOS_POLICY_HISTORY_KEEP_LAST,
	RMW_QOS_POLICY_HISTORY_KEEP_ALL,
	RMW_QOS_POLICY_HISTORY_UNKNOWN
} rmw_qos_history_policy_t;

typedef enum rmw_qos_durability_policy_e {
	RMW_QOS_POLICY_DURABILITY_SYSTEM_DEFAULT,
	RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL,
	RMW_QOS_POLICY_DURABILITY_VOLATILE,
	RMW_QOS_POLICY_DURABILITY_UNKNOWN,
	RMW_QOS_POLICY_DURABILITY_BEST_AVAILABLE
} rmw_qos_durability_policy_t;

typedef enum rmw_qos_liveliness_policy_e {
	RMW_QOS_POLICY_LIVELINESS_SYSTEM_DEFAULT = 0,
	RMW_QOS_POLICY_LIVELINESS_AUTOMATIC = 1,
	RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_NODE = 2, /* deprecated in ROS 2 */
	RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC = 3,
	RMW_QOS_POLICY_LIVELINESS_UNKNOWN = 4,
	RMW_QOS_POLICY_LIVELINESS_BEST_AVAILABLE = 5
} rmw_qos_liveliness_policy_t;

typedef struct rmw_qos_profile_s {
	enum rmw_qos_history_policy_e history;
	size_t depth;
	enum rmw_qos_reliability_policy_e reliability;
	enum rmw_qos_durability_policy_e durability;
	struct rmw_time_s deadline;
	struct rmw_time_s lifespan;
	enum rmw_qos_liveliness_policy_e liveliness;
	struct rmw_time_s liveliness_lease_duration;
	bool avoid_ros_namespace_conventions;
} rmw_qos_profile_t;

typedef enum rmw_qos_compatibility_type_e {
	RMW_QOS_COMPATIBILITY_OK = 0,
	RMW_QOS_COMPATIBILITY_WARNING,
	RMW_QOS_COMPATIBILITY_ERROR
} rmw_qos_compatibility_type_t;

typedef enum rmw_qos_policy_kind_e {
	RMW_QOS_POLICY_INVALID = 1 << 0,
	RMW_QOS_POLICY_DURABILITY = 1 << 1,
	RMW_QOS_POLICY_DEADLINE = 1 << 2,
	RMW_QOS_POLICY_LIVELINESS = 1 << 3,
	RMW_QOS_POLICY_RELIABILITY = 1 << 4,
	RMW_QOS_POLICY_HISTORY = 1 << 5,
	RMW_QOS_POLICY_LIFESPAN = 1 << 6,
	RMW_QOS_POLICY_DEPTH = 1 << 7,
	RMW_QOS_POLICY_LIVELINESS_LEASE_DURATION = 1 << 8,
	RMW_QOS_POLICY_AVOID_ROS_NAMESPACE_CONVENTIONS = 1 << 9
} rmw_qos_policy_kind_t;

/* ---- init options and context -------------------------------------------- */

typedef enum rmw_security_enforcement_policy_e {
	RMW_SECURITY_ENFORCEMENT_PERMISSIVE,
	RMW_SECURITY_ENFORCEMENT_ENFORCE
} rmw_security_enforcement_policy_t;

typedef struct rmw_security_options_s {
	rmw_security_enforcement_policy_t enforce_security;
	char *security_root_path;
} rmw_security_options_t;

typedef enum rmw_localhost_only_e {
	RMW_LOCALHOST_ONLY_DEFAULT = 0,
	RMW_LOCALHOST_ONLY_ENABLED = 1,
	RMW_LOCALHOST_ONLY_DISABLED = 2
} rmw_localhost_only_t;

typedef enum rmw_automatic_discovery_range_e {
	RMW_AUTOMATIC_DISCOVERY_RANGE_NOT_SET = 0,
	RMW_AUTOMATIC_DISCOVERY_RANGE_OFF = 1,
	RMW_AUTOMATIC_DISCOVERY_RANGE_LOCALHOST = 2,
	RMW_AUTOMATIC_DISCOVERY_RANGE_SUBNET = 3,
	RMW_AUTOMATIC_DISCOVERY_RANGE_SYSTEM_DEFAULT = 4
} rmw_automatic_discovery_range_t;

#define RMW_DISCOVERY_OPTIONS_STATIC_PEERS_MAX_LENGTH 256
typedef struct rmw_peer_address_s {
	char peer_address[RMW_DISCOVERY_OPTIONS_STATIC_PEERS_MAX_LENGTH];
} rmw_peer_address_t;

typedef struct rmw_discovery_options_s {
	rmw_automatic_discovery_range_t automatic_discovery_range;
	rmw_peer_address_t *static_peers;
	size_t static_peers_count;
	rcutils_allocator_t allocator;
} rmw_discovery_options_t;

typedef struct rmw_init_options_impl_s rmw_init_options_impl_t;

typedef struct rmw_init_options_s {
	uint64_t instance_id;
	const char *implementation_identifier;
	size_t domain_id;
	rmw_security_options_t security_options;
#ifndef RGAPS_ROS_KILTED
	rmw_localhost_only_t localhost_only;
#endif
	rmw_discovery_options_t discovery_options;
	char *enclave;
	rcutils_allocator_t allocator;
	rmw_init_options_impl_t *impl;
} rmw_init_options_t;

typedef struct rmw_context_impl_s rmw_context_impl_t;

typedef struct rmw_context_s {
	uint64_t instance_id;
	const char *implementation_identifier;
	rmw_init_options_t options;
	size_t actual_domain_id;
	rmw_context_impl_t *impl;
} rmw_context_t;

/* ---- handles -------------------------------------------------------------- */

typedef struct rmw_node_s {
	const char *implementation_identifier;
	void *data;
	const char *name;
	const char *namespace_;
	rmw_context_t *context;
} rmw_node_t;

typedef enum rmw_endpoint_type_e {
	RMW_ENDPOINT_INVALID = 0,
	RMW_ENDPOINT_PUBLISHER,
	RMW_ENDPOINT_SUBSCRIPTION
} rmw_endpoint_type_t;

typedef enum rmw_unique_network_flow_endpoints_requirement_e {
	RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED = 0,
	RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_STRICTLY_REQUIRED,
	RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_OPTIONALLY_REQUIRED,
	RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_SYSTEM_DEFAULT
} rmw_unique_network_flow_endpoints_requirement_t;

typedef struct rmw_publisher_options_s {
	void *rmw_specific_publisher_payload;
	rmw_unique_network_flow_endpoints_requirement_t require_unique_network_flow_endpoints;
} rmw_publisher_options_t;

typedef struct rmw_publisher_s {
	const char *implementation_identifier;
	void *data;
	const char *topic_name;
	rmw_publisher_options_t options;
	bool can_loan_messages;
} rmw_publisher_t;

typedef struct rmw_subscription_content_filter_options_s {
	char *filter_expression;
	rcutils_string_array_t expression_parameters;
} rmw_subscription_content_filter_options_t;

typedef struct rmw_subscription_options_s {
	void *rmw_specific_subscription_payload;
	bool ignore_local_publications;
	rmw_unique_network_flow_endpoints_requirement_t require_unique_network_flow_endpoints;
	rmw_subscription_content_filter_options_t *content_filter_options;
} rmw_subscription_options_t;

typedef struct rmw_subscription_s {
	const char *implementation_identifier;
	void *data;
	const char *topic_name;
	rmw_subscription_options_t options;
	bool can_loan_messages;
	bool is_cft_enabled;
} rmw_subscription_t;

typedef struct rmw_service_s {
	const char *implementation_identifier;
	void *data;
	const char *service_name;
} rmw_service_t;

typedef struct rmw_client_s {
	const char *implementation_identifier;
	void *data;
	const char *service_name;
} rmw_client_t;

typedef struct rmw_guard_condition_s {
	const char *implementation_identifier;
	void *data;
	rmw_context_t *context;
} rmw_guard_condition_t;

typedef struct rmw_publisher_allocation_s {
	const char *implementation_identifier;
	void *data;
} rmw_publisher_allocation_t;

typedef struct rmw_subscription_allocation_s {
	const char *implementation_identifier;
	void *data;
} rmw_subscription_allocation_t;

typedef struct rmw_subscriptions_s {
	size_t subscriber_count;
	void **subscribers;
} rmw_subscriptions_t;

typedef struct rmw_services_s {
	size_t service_count;
	void **services;
} rmw_services_t;

typedef struct rmw_clients_s {
	size_t client_count;
	void **clients;
} rmw_clients_t;

typedef struct rmw_events_s {
	size_t event_count;
	void **events;
} rmw_events_t;

typedef struct rmw_guard_conditions_s {
	size_t guard_condition_count;
	void **guard_conditions;
} rmw_guard_conditions_t;

typedef struct rmw_wait_set_s {
	const char *implementation_identifier;
	rmw_guard_conditions_t *guard_conditions;
	void *data;
} rmw_wait_set_t;

typedef struct rmw_request_id_s {
	uint8_t writer_guid[RMW_GID_STORAGE_SIZE];
	int64_t sequence_number;
} rmw_request_id_t;

typedef struct rmw_service_info_s {
	rmw_time_point_value_t source_timestamp;
	rmw_time_point_value_t received_timestamp;
	rmw_request_id_t request_id;
} rmw_service_info_t;

typedef struct rmw_gid_s {
	const char *implementation_identifier;
	uint8_t data[RMW_GID_STORAGE_SIZE];
} rmw_gid_t;

typedef struct rmw_message_info_s {
	rmw_time_point_value_t source_timestamp;
	rmw_time_point_value_t received_timestamp;
	uint64_t publication_sequence_number;
	uint64_t reception_sequence_number;
	rmw_gid_t publisher_gid;
	bool from_intra_process;
} rmw_message_info_t;

typedef struct rmw_message_sequence_s {
	void **data;
	size_t size;
	size_t capacity;
	rcutils_allocator_t *allocator;
} rmw_message_sequence_t;

typedef struct rmw_message_info_sequence_s {
	rmw_message_info_t *data;
	size_t size;
	size_t capacity;
	rcutils_allocator_t *allocator;
} rmw_message_info_sequence_t;

typedef enum rmw_log_severity_e {
	RMW_LOG_SEVERITY_DEBUG = 10,
	RMW_LOG_SEVERITY_INFO = 20,
	RMW_LOG_SEVERITY_WARN = 30,
	RMW_LOG_SEVERITY_ERROR = 40,
	RMW_LOG_SEVERITY_FATAL = 50
} rmw_log_severity_t;

typedef enum rmw_feature_e {
	RMW_FEATURE_MESSAGE_INFO_PUBLICATION_SEQUENCE_NUMBER = 0,
	RMW_FEATURE_MESSAGE_INFO_RECEPTION_SEQUENCE_NUMBER = 1,
	RMW_MIDDLEWARE_SUPPORTS_TYPE_DISCOVERY = 2,
	RMW_MIDDLEWARE_CAN_TAKE_DYNAMIC_MESSAGE = 3
} rmw_feature_t;

/* ---- graph ---------------------------------------------------------------- */

typedef struct rmw_names_and_types_s {
	rcutils_string_array_t names;
	rcutils_string_array_t *types;
} rmw_names_and_types_t;

typedef struct rmw_topic_endpoint_info_s {
	const char *node_name;
	const char *node_namespace;
	const char *topic_type;
	rosidl_type_hash_t topic_type_hash;
	rmw_endpoint_type_t endpoint_type;
	uint8_t endpoint_gid[RMW_GID_STORAGE_SIZE];
	rmw_qos_profile_t qos_profile;
} rmw_topic_endpoint_info_t;

typedef struct rmw_topic_endpoint_info_array_s {
	size_t size;
	rmw_topic_endpoint_info_t *info_array;
} rmw_topic_endpoint_info_array_t;

#define RMW_INET_ADDRSTRLEN 48
typedef enum rmw_transport_protocol_e {
	RMW_TRANSPORT_PROTOCOL_UNKNOWN = 0,
	RMW_TRANSPORT_PROTOCOL_UDP,
	RMW_TRANSPORT_PROTOCOL_TCP,
	RMW_TRANSPORT_PROTOCOL_COUNT
} rmw_transport_protocol_t;
typedef enum rmw_internet_protocol_e {
	RMW_INTERNET_PROTOCOL_UNKNOWN = 0,
	RMW_INTERNET_PROTOCOL_IPV4,
	RMW_INTERNET_PROTOCOL_IPV6,
	RMW_INTERNET_PROTOCOL_COUNT
} rmw_internet_protocol_t;
typedef struct rmw_network_flow_endpoint_s {
	rmw_transport_protocol_t transport_protocol;
	rmw_internet_protocol_t internet_protocol;
	uint16_t transport_port;
	uint32_t flow_label;
	uint8_t dscp;
	char internet_address[RMW_INET_ADDRSTRLEN];
} rmw_network_flow_endpoint_t;
typedef struct rmw_network_flow_endpoint_array_s {
	size_t size;
	rmw_network_flow_endpoint_t *network_flow_endpoint;
	rcutils_allocator_t *allocator;
} rmw_network_flow_endpoint_array_t;

/* ---- events --------------------------------------------------------------- */

typedef enum rmw_event_type_e {
	RMW_EVENT_LIVELINESS_CHANGED,
	RMW_EVENT_REQUESTED_DEADLINE_MISSED,
	RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE,
	RMW_EVENT_MESSAGE_LOST,
	RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE,
	RMW_EVENT_SUBSCRIPTION_MATCHED,
	RMW_EVENT_LIVELINESS_LOST,
	RMW_EVENT_OFFERED_DEADLINE_MISSED,
	RMW_EVENT_OFFERED_QOS_INCOMPATIBLE,
	RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE,
	RMW_EVENT_PUBLICATION_MATCHED,
	RMW_EVENT_INVALID
} rmw_event_type_t;

typedef struct rmw_event_s {
	const char *implementation_identifier;
	void *data;
	rmw_event_type_t event_type;
} rmw_event_t;

typedef void (*rmw_event_callback_t)(const void *user_data, size_t number_of_events);

typedef struct rmw_qos_incompatible_event_status_s {
	int32_t total_count;
	int32_t total_count_change;
	rmw_qos_policy_kind_t last_policy_kind;
} rmw_qos_incompatible_event_status_t;
typedef rmw_qos_incompatible_event_status_t rmw_requested_qos_incompatible_event_status_t;
typedef rmw_qos_incompatible_event_status_t rmw_offered_qos_incompatible_event_status_t;

typedef struct rmw_incompatible_type_status_s {
	int32_t total_count;
	int32_t total_count_change;
} rmw_incompatible_type_status_t;

typedef struct rmw_liveliness_changed_status_s {
	int32_t alive_count;
	int32_t not_alive_count;
	int32_t alive_count_change;
	int32_t not_alive_count_change;
} rmw_liveliness_changed_status_t;

typedef struct rmw_liveliness_lost_status_s {
	int32_t total_count;
	int32_t total_count_change;
} rmw_liveliness_lost_status_t;

typedef struct rmw_matched_status_s {
	size_t total_count;
	size_t total_count_change;
	size_t current_count;
	int32_t current_count_change;
} rmw_matched_status_t;

typedef struct rmw_message_lost_status_s {
	size_t total_count;
	size_t total_count_change;
} rmw_message_lost_status_t;

typedef struct rmw_offered_deadline_missed_status_s {
	int32_t total_count;
	int32_t total_count_change;
} rmw_offered_deadline_missed_status_t;

typedef struct rmw_requested_deadline_missed_status_s {
	int32_t total_count;
	int32_t total_count_change;
} rmw_requested_deadline_missed_status_t;

/* ---- the functions an rmw implementation exports ------------------------- */

const char *rmw_get_implementation_identifier(void);
const char *rmw_get_serialization_format(void);

rmw_ret_t rmw_init_options_init(rmw_init_options_t *init_options, rcutils_allocator_t allocator);
rmw_ret_t rmw_init_options_copy(const rmw_init_options_t *src, rmw_init_options_t *dst);
rmw_ret_t rmw_init_options_fini(rmw_init_options_t *init_options);
rmw_ret_t rmw_init(const rmw_init_options_t *options, rmw_context_t *context);
rmw_ret_t rmw_shutdown(rmw_context_t *context);
rmw_ret_t rmw_context_fini(rmw_context_t *context);

rmw_node_t *rmw_create_node(rmw_context_t *context, const char *name, const char *namespace_);
rmw_ret_t rmw_destroy_node(rmw_node_t *node);
rmw_ret_t rmw_node_assert_liveliness(const rmw_node_t *node);
const rmw_guard_condition_t *rmw_node_get_graph_guard_condition(const rmw_node_t *node);

rmw_ret_t rmw_init_publisher_allocation(const rosidl_message_type_support_t *type_support,
	const rosidl_runtime_c__Sequence__bound *message_bounds, rmw_publisher_allocation_t *allocation);
rmw_ret_t rmw_fini_publisher_allocation(rmw_publisher_allocation_t *allocation);
rmw_publisher_t *rmw_create_publisher(const rmw_node_t *node,
	const rosidl_message_type_support_t *type_support, const char *topic_name,
	const rmw_qos_profile_t *qos_profile, const rmw_publisher_options_t *publisher_options);
rmw_ret_t rmw_destroy_publisher(rmw_node_t *node, rmw_publisher_t *publisher);
rmw_ret_t rmw_borrow_loaned_message(const rmw_publisher_t *publisher,
	const rosidl_message_type_support_t *type_support, void **ros_message);
rmw_ret_t rmw_return_loaned_message_from_publisher(const rmw_publisher_t *publisher,
	void *loaned_message);
rmw_ret_t rmw_publish(const rmw_publisher_t *publisher, const void *ros_message,
	rmw_publisher_allocation_t *allocation);
rmw_ret_t rmw_publish_loaned_message(const rmw_publisher_t *publisher, void *ros_message,
	rmw_publisher_allocation_t *allocation);
rmw_ret_t rmw_publisher_count_matched_subscriptions(const rmw_publisher_t *publisher,
	size_t *subscription_count);
rmw_ret_t rmw_publisher_get_actual_qos(const rmw_publisher_t *publisher, rmw_qos_profile_t *qos);
rmw_ret_t rmw_publish_serialized_message(const rmw_publisher_t *publisher,
	const rmw_serialized_message_t *serialized_message, rmw_publisher_allocation_t *allocation);
rmw_ret_t rmw_get_serialized_message_size(const rosidl_message_type_support_t *type_support,
	const rosidl_runtime_c__Sequence__bound *message_bounds, size_t *size);
rmw_ret_t rmw_publisher_assert_liveliness(const rmw_publisher_t *publisher);
rmw_ret_t rmw_publisher_wait_for_all_acked(const rmw_publisher_t *publisher, rmw_time_t wait_timeout);
rmw_ret_t rmw_serialize(const void *ros_message, const rosidl_message_type_support_t *type_support,
	rmw_serialized_message_t *serialized_message);
rmw_ret_t rmw_deserialize(const rmw_serialized_message_t *serialized_message,
	const rosidl_message_type_support_t *type_support, void *ros_message);

rmw_ret_t rmw_init_subscription_allocation(const rosidl_message_type_support_t *type_support,
	const rosidl_runtime_c__Sequence__bound *message_bounds, rmw_subscription_allocation_t *allocation);
rmw_ret_t rmw_fini_subscription_allocation(rmw_subscription_allocation_t *allocation);
rmw_subscription_t *rmw_create_subscription(const rmw_node_t *node,
	const rosidl_message_type_support_t *type_support, const char *topic_name,
	const rmw_qos_profile_t *qos_policies, const rmw_subscription_options_t *subscription_options);
rmw_ret_t rmw_destroy_subscription(rmw_node_t *node, rmw_subscription_t *subscription);
rmw_ret_t rmw_subscription_count_matched_publishers(const rmw_subscription_t *subscription,
	size_t *publisher_count);
rmw_ret_t rmw_subscription_get_actual_qos(const rmw_subscription_t *subscription,
	rmw_qos_profile_t *qos);
rmw_ret_t rmw_subscription_set_content_filter(rmw_subscription_t *subscription,
	const rmw_subscription_content_filter_options_t *options);
rmw_ret_t rmw_subscription_get_content_filter(const rmw_subscription_t *subscription,
	rcutils_allocator_t *allocator, rmw_subscription_content_filter_options_t *options);
rmw_ret_t rmw_take(const rmw_subscription_t *subscription, void *ros_message, bool *taken,
	rmw_subscription_allocation_t *allocation);
rmw_ret_t rmw_take_with_info(const rmw_subscription_t *subscription, void *ros_message,
	bool *taken, rmw_message_info_t *message_info, rmw_subscription_allocation_t *allocation);
rmw_ret_t rmw_take_sequence(const rmw_subscription_t *subscription, size_t count,
	rmw_message_sequence_t *message_sequence, rmw_message_info_sequence_t *message_info_sequence,
	size_t *taken, rmw_subscription_allocation_t *allocation);
rmw_ret_t rmw_take_serialized_message(const rmw_subscription_t *subscription,
	rmw_serialized_message_t *serialized_message, bool *taken,
	rmw_subscription_allocation_t *allocation);
rmw_ret_t rmw_take_serialized_message_with_info(const rmw_subscription_t *subscription,
	rmw_serialized_message_t *serialized_message, bool *taken, rmw_message_info_t *message_info,
	rmw_subscription_allocation_t *allocation);
rmw_ret_t rmw_take_loaned_message(const rmw_subscription_t *subscription, void **loaned_message,
	bool *taken, rmw_subscription_allocation_t *allocation);
rmw_ret_t rmw_take_loaned_message_with_info(const rmw_subscription_t *subscription,
	void **loaned_message, bool *taken, rmw_message_info_t *message_info,
	rmw_subscription_allocation_t *allocation);
rmw_ret_t rmw_return_loaned_message_from_subscription(const rmw_subscription_t *subscription,
	void *loaned_message);
rmw_ret_t rmw_take_dynamic_message(const rmw_subscription_t *subscription,
	rosidl_dynamic_typesupport_dynamic_data_t *dynamic_message, bool *taken,
	rmw_subscription_allocation_t *allocation);
rmw_ret_t rmw_take_dynamic_message_with_info(const rmw_subscription_t *subscription,
	rosidl_dynamic_typesupport_dynamic_data_t *dynamic_message, bool *taken,
	rmw_message_info_t *message_info, rmw_subscription_allocation_t *allocation);
rmw_ret_t rmw_serialization_support_init(const char *serialization_lib_name,
	rcutils_allocator_t *allocator,
	rosidl_dynamic_typesupport_serialization_support_t *serialization_support);

rmw_client_t *rmw_create_client(const rmw_node_t *node,
	const rosidl_service_type_support_t *type_support, const char *service_name,
	const rmw_qos_profile_t *qos_policies);
rmw_ret_t rmw_destroy_client(rmw_node_t *node, rmw_client_t *client);
rmw_ret_t rmw_send_request(const rmw_client_t *client, const void *ros_request, int64_t *sequence_id);
rmw_ret_t rmw_take_response(const rmw_client_t *client, rmw_service_info_t *request_header,
	void *ros_response, bool *taken);
rmw_ret_t rmw_client_request_publisher_get_actual_qos(const rmw_client_t *client, rmw_qos_profile_t *qos);
rmw_ret_t rmw_client_response_subscription_get_actual_qos(const rmw_client_t *client,
	rmw_qos_profile_t *qos);
rmw_service_t *rmw_create_service(const rmw_node_t *node,
	const rosidl_service_type_support_t *type_support, const char *service_name,
	const rmw_qos_profile_t *qos_profile);
rmw_ret_t rmw_destroy_service(rmw_node_t *node, rmw_service_t *service);
rmw_ret_t rmw_take_request(const rmw_service_t *service, rmw_service_info_t *request_header,
	void *ros_request, bool *taken);
rmw_ret_t rmw_send_response(const rmw_service_t *service, rmw_request_id_t *request_header,
	void *ros_response);
rmw_ret_t rmw_service_request_subscription_get_actual_qos(const rmw_service_t *service,
	rmw_qos_profile_t *qos);
rmw_ret_t rmw_service_response_publisher_get_actual_qos(const rmw_service_t *service,
	rmw_qos_profile_t *qos);
rmw_ret_t rmw_service_server_is_available(const rmw_node_t *node, const rmw_client_t *client,
	bool *is_available);
rmw_ret_t rmw_get_gid_for_client(const rmw_client_t *client, rmw_gid_t *gid);

rmw_guard_condition_t *rmw_create_guard_condition(rmw_context_t *context);
rmw_ret_t rmw_destroy_guard_condition(rmw_guard_condition_t *guard_condition);
rmw_ret_t rmw_trigger_guard_condition(const rmw_guard_condition_t *guard_condition);
rmw_wait_set_t *rmw_create_wait_set(rmw_context_t *context, size_t max_conditions);
rmw_ret_t rmw_destroy_wait_set(rmw_wait_set_t *wait_set);
rmw_ret_t rmw_wait(rmw_subscriptions_t *subscriptions, rmw_guard_conditions_t *guard_conditions,
	rmw_services_t *services, rmw_clients_t *clients, rmw_events_t *events,
	rmw_wait_set_t *wait_set, const rmw_time_t *wait_timeout);

rmw_ret_t rmw_get_node_names(const rmw_node_t *node, rcutils_string_array_t *node_names,
	rcutils_string_array_t *node_namespaces);
rmw_ret_t rmw_get_node_names_with_enclaves(const rmw_node_t *node,
	rcutils_string_array_t *node_names, rcutils_string_array_t *node_namespaces,
	rcutils_string_array_t *enclaves);
rmw_ret_t rmw_count_publishers(const rmw_node_t *node, const char *topic_name, size_t *count);
rmw_ret_t rmw_count_subscribers(const rmw_node_t *node, const char *topic_name, size_t *count);
rmw_ret_t rmw_count_clients(const rmw_node_t *node, const char *service_name, size_t *count);
rmw_ret_t rmw_count_services(const rmw_node_t *node, const char *service_name, size_t *count);
rmw_ret_t rmw_get_gid_for_publisher(const rmw_publisher_t *publisher, rmw_gid_t *gid);
rmw_ret_t rmw_compare_gids_equal(const rmw_gid_t *gid1, const rmw_gid_t *gid2, bool *result);
rmw_ret_t rmw_get_topic_names_and_types(const rmw_node_t *node, rcutils_allocator_t *allocator,
	bool no_demangle, rmw_names_and_types_t *topic_names_and_types);
rmw_ret_t rmw_get_service_names_and_types(const rmw_node_t *node, rcutils_allocator_t *allocator,
	rmw_names_and_types_t *service_names_and_types);
rmw_ret_t rmw_get_subscriber_names_and_types_by_node(const rmw_node_t *node,
	rcutils_allocator_t *allocator, const char *node_name, const char *node_namespace,
	bool no_demangle, rmw_names_and_types_t *topic_names_and_types);
rmw_ret_t rmw_get_publisher_names_and_types_by_node(const rmw_node_t *node,
	rcutils_allocator_t *allocator, const char *node_name, const char *node_namespace,
	bool no_demangle, rmw_names_and_types_t *topic_names_and_types);
rmw_ret_t rmw_get_service_names_and_types_by_node(const rmw_node_t *node,
	rcutils_allocator_t *allocator, const char *node_name, const char *node_namespace,
	rmw_names_and_types_t *service_names_and_types);
rmw_ret_t rmw_get_client_names_and_types_by_node(const rmw_node_t *node,
	rcutils_allocator_t *allocator, const char *node_name, const char *node_namespace,
	rmw_names_and_types_t *service_names_and_types);
rmw_ret_t rmw_get_publishers_info_by_topic(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *topic_name, bool no_mangle, rmw_topic_endpoint_info_array_t *publishers_info);
rmw_ret_t rmw_get_subscriptions_info_by_topic(const rmw_node_t *node,
	rcutils_allocator_t *allocator, const char *topic_name, bool no_mangle,
	rmw_topic_endpoint_info_array_t *subscriptions_info);

rmw_ret_t rmw_publisher_event_init(rmw_event_t *rmw_event, const rmw_publisher_t *publisher,
	rmw_event_type_t event_type);
rmw_ret_t rmw_subscription_event_init(rmw_event_t *rmw_event,
	const rmw_subscription_t *subscription, rmw_event_type_t event_type);
rmw_ret_t rmw_take_event(const rmw_event_t *event_handle, void *event_info, bool *taken);
rmw_ret_t rmw_event_set_callback(rmw_event_t *event, rmw_event_callback_t callback,
	const void *user_data);
rmw_ret_t rmw_subscription_set_on_new_message_callback(rmw_subscription_t *subscription,
	rmw_event_callback_t callback, const void *user_data);
rmw_ret_t rmw_service_set_on_new_request_callback(rmw_service_t *service,
	rmw_event_callback_t callback, const void *user_data);
rmw_ret_t rmw_client_set_on_new_response_callback(rmw_client_t *client,
	rmw_event_callback_t callback, const void *user_data);

rmw_ret_t rmw_publisher_get_network_flow_endpoints(const rmw_publisher_t *publisher,
	rcutils_allocator_t *allocator, rmw_network_flow_endpoint_array_t *network_flow_endpoint_array);
rmw_ret_t rmw_subscription_get_network_flow_endpoints(const rmw_subscription_t *subscription,
	rcutils_allocator_t *allocator, rmw_network_flow_endpoint_array_t *network_flow_endpoint_array);

rmw_ret_t rmw_qos_profile_check_compatible(const rmw_qos_profile_t publisher_profile,
	const rmw_qos_profile_t subscription_profile, rmw_qos_compatibility_type_t *compatibility,
	char *reason, size_t reason_size);
rmw_ret_t rmw_set_log_severity(rmw_log_severity_t severity);
bool rmw_feature_supported(rmw_feature_t feature);

#ifdef __cplusplus
}
#endif

#endif /* RGAPS_USE_ROS_HEADERS */

#ifdef __cplusplus
extern "C" {
#endif

/* Not in Jazzy's rmw (the notes list it with Kilted/Rolling): exported
 * anyway, harmless where nobody calls it. */
bool rmw_event_type_is_supported(rmw_event_type_t rmw_event_type);

/* The harness' view of the error state: the last error set on the calling
 * thread by any rmw_* call of this library ("" when the last call
 * succeeded or set none). */
const char *rgaps_rmw_last_error(void);

#ifdef __cplusplus
}
#endif

/* ---- the ABI facts this library relies on (RMW_NOTES.md) ---------------- */

#ifndef __cplusplus
#define RGAPS_ASSERT_SIZE(T, n) _Static_assert(sizeof(T) == (n), "sizeof(" #T ") != " #n)
#define RGAPS_ASSERT_OFF(T, m, n) \
	_Static_assert(offsetof(T, m) == (n), "offsetof(" #T ", " #m ") != " #n)
#else
#define RGAPS_ASSERT_SIZE(T, n) static_assert(sizeof(T) == (n), "sizeof(" #T ") != " #n)
#define RGAPS_ASSERT_OFF(T, m, n) \
	static_assert(offsetof(T, m) == (n), "offsetof(" #T ", " #m ") != " #n)
#endif

RGAPS_ASSERT_SIZE(rcutils_allocator_t, 40);
RGAPS_ASSERT_SIZE(rcutils_uint8_array_t, 64);
RGAPS_ASSERT_SIZE(rmw_serialized_message_t, 64);
RGAPS_ASSERT_SIZE(rcutils_string_array_t, 56);
RGAPS_ASSERT_SIZE(rmw_time_t, 16);
RGAPS_ASSERT_SIZE(rmw_qos_profile_t, 88);
RGAPS_ASSERT_OFF(rmw_qos_profile_t, history, 0);
RGAPS_ASSERT_OFF(rmw_qos_profile_t, depth, 8);
RGAPS_ASSERT_OFF(rmw_qos_profile_t, reliability, 16);
RGAPS_ASSERT_OFF(rmw_qos_profile_t, durability, 20);
RGAPS_ASSERT_OFF(rmw_qos_profile_t, deadline, 24);
RGAPS_ASSERT_OFF(rmw_qos_profile_t, lifespan, 40);
RGAPS_ASSERT_OFF(rmw_qos_profile_t, liveliness, 56);
RGAPS_ASSERT_OFF(rmw_qos_profile_t, liveliness_lease_duration, 64);
RGAPS_ASSERT_OFF(rmw_qos_profile_t, avoid_ros_namespace_conventions, 80);
RGAPS_ASSERT_SIZE(rmw_security_options_t, 16);
RGAPS_ASSERT_SIZE(rmw_discovery_options_t, 64);
RGAPS_ASSERT_OFF(rmw_discovery_options_t, static_peers, 8);
RGAPS_ASSERT_OFF(rmw_discovery_options_t, static_peers_count, 16);
RGAPS_ASSERT_OFF(rmw_discovery_options_t, allocator, 24);
RGAPS_ASSERT_SIZE(rmw_peer_address_t, 256);
RGAPS_ASSERT_OFF(rmw_init_options_t, instance_id, 0);
RGAPS_ASSERT_OFF(rmw_init_options_t, implementation_identifier, 8);
RGAPS_ASSERT_OFF(rmw_init_options_t, domain_id, 16);
RGAPS_ASSERT_OFF(rmw_init_options_t, security_options, 24);
#ifndef RGAPS_ROS_KILTED
RGAPS_ASSERT_SIZE(rmw_init_options_t, 168);
RGAPS_ASSERT_OFF(rmw_init_options_t, localhost_only, 40);
RGAPS_ASSERT_OFF(rmw_init_options_t, discovery_options, 48);
RGAPS_ASSERT_OFF(rmw_init_options_t, enclave, 112);
RGAPS_ASSERT_OFF(rmw_init_options_t, allocator, 120);
RGAPS_ASSERT_OFF(rmw_init_options_t, impl, 160);
RGAPS_ASSERT_SIZE(rmw_context_t, 200);
RGAPS_ASSERT_OFF(rmw_context_t, actual_domain_id, 184);
RGAPS_ASSERT_OFF(rmw_context_t, impl, 192);
#else
RGAPS_ASSERT_SIZE(rmw_init_options_t, 160);
RGAPS_ASSERT_OFF(rmw_init_options_t, discovery_options, 40);
RGAPS_ASSERT_OFF(rmw_init_options_t, enclave, 104);
RGAPS_ASSERT_OFF(rmw_init_options_t, allocator, 112);
RGAPS_ASSERT_OFF(rmw_init_options_t, impl, 152);
RGAPS_ASSERT_SIZE(rmw_context_t, 192);
RGAPS_ASSERT_OFF(rmw_context_t, actual_domain_id, 176);
RGAPS_ASSERT_OFF(rmw_context_t, impl, 184);
#endif
RGAPS_ASSERT_OFF(rmw_context_t, options, 16);
RGAPS_ASSERT_SIZE(rmw_node_t, 40);
RGAPS_ASSERT_OFF(rmw_node_t, data, 8);
RGAPS_ASSERT_OFF(rmw_node_t, name, 16);
RGAPS_ASSERT_OFF(rmw_node_t, namespace_, 24);
RGAPS_ASSERT_OFF(rmw_node_t, context, 32);
RGAPS_ASSERT_SIZE(rmw_publisher_options_t, 16);
RGAPS_ASSERT_SIZE(rmw_publisher_t, 48);
RGAPS_ASSERT_OFF(rmw_publisher_t, options, 24);
RGAPS_ASSERT_OFF(rmw_publisher_t, can_loan_messages, 40);
RGAPS_ASSERT_SIZE(rmw_subscription_options_t, 24);
RGAPS_ASSERT_SIZE(rmw_subscription_t, 56);
RGAPS_ASSERT_OFF(rmw_subscription_t, options, 24);
RGAPS_ASSERT_OFF(rmw_subscription_t, can_loan_messages, 48);
RGAPS_ASSERT_OFF(rmw_subscription_t, is_cft_enabled, 49);
RGAPS_ASSERT_SIZE(rmw_service_t, 24);
RGAPS_ASSERT_SIZE(rmw_client_t, 24);
RGAPS_ASSERT_SIZE(rmw_guard_condition_t, 24);
RGAPS_ASSERT_SIZE(rmw_wait_set_t, 24);
RGAPS_ASSERT_SIZE(rmw_gid_t, 24);
RGAPS_ASSERT_OFF(rmw_gid_t, data, 8);
RGAPS_ASSERT_SIZE(rmw_message_info_t, 64);
RGAPS_ASSERT_OFF(rmw_message_info_t, publication_sequence_number, 16);
RGAPS_ASSERT_OFF(rmw_message_info_t, reception_sequence_number, 24);
RGAPS_ASSERT_OFF(rmw_message_info_t, publisher_gid, 32);
RGAPS_ASSERT_OFF(rmw_message_info_t, from_intra_process, 56);
RGAPS_ASSERT_SIZE(rmw_request_id_t, 24);
RGAPS_ASSERT_SIZE(rmw_service_info_t, 40);
RGAPS_ASSERT_OFF(rmw_service_info_t, request_id, 16);
RGAPS_ASSERT_SIZE(rmw_event_t, 24);
RGAPS_ASSERT_OFF(rmw_event_t, event_type, 16);
RGAPS_ASSERT_SIZE(rmw_names_and_types_t, 64);
RGAPS_ASSERT_SIZE(rmw_topic_endpoint_info_t, 168);
RGAPS_ASSERT_OFF(rmw_topic_endpoint_info_t, topic_type_hash, 24);
RGAPS_ASSERT_OFF(rmw_topic_endpoint_info_t, endpoint_type, 60);
RGAPS_ASSERT_OFF(rmw_topic_endpoint_info_t, endpoint_gid, 64);
RGAPS_ASSERT_OFF(rmw_topic_endpoint_info_t, qos_profile, 80);
RGAPS_ASSERT_SIZE(rmw_topic_endpoint_info_array_t, 16);
RGAPS_ASSERT_SIZE(rmw_message_sequence_t, 32);
RGAPS_ASSERT_SIZE(rmw_message_info_sequence_t, 32);
RGAPS_ASSERT_SIZE(rmw_matched_status_t, 32);
RGAPS_ASSERT_SIZE(rmw_liveliness_changed_status_t, 16);
RGAPS_ASSERT_SIZE(rmw_qos_incompatible_event_status_t, 12);
RGAPS_ASSERT_SIZE(rmw_message_lost_status_t, 16);

#endif /* RGAPS_RMW_ABI_H */
