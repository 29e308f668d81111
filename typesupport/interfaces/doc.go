// Package interfaces embeds a small set of standard ROS 2 interface
// definitions so that tools can encode, decode and print the common types
// without a ROS installation:
//
//   - builtin_interfaces/msg: Time, Duration
//   - std_msgs/msg: String, Bool, Empty, Int32, Int64, UInt8, Float32,
//     Float64, Header, ColorRGBA, MultiArrayDimension, MultiArrayLayout,
//     UInt8MultiArray, Float32MultiArray
//   - geometry_msgs/msg: Point, Point32, Vector3, Quaternion, Pose,
//     PoseStamped, Transform, TransformStamped, Twist
//   - sensor_msgs/msg: Image, CompressedImage, RegionOfInterest, CameraInfo,
//     PointField, PointCloud2
//   - std_srvs/srv: Empty, Trigger, SetBool; example_interfaces/srv: AddTwoInts
//
// The files were written for this project from the field lists that the
// ROS 2 interface documentation publishes (names, types, array forms,
// defaults and constants as in ROS 2 Jazzy); comments are our own. Field
// order and types are what matters on the wire, and the tests check them
// against hand-computed CDR bytes.
//
// [Search] finds the definitions of any other type where a ROS 2
// installation keeps them: in the directories of RGAPS_INTERFACE_PATH, then
// in <prefix>/share of every AMENT_PREFIX_PATH prefix ([SearchPath]), each
// laid out as <pkg>/msg/<Name>.msg; the embedded definitions come last.
// Files are read when a type is first needed.
package interfaces
