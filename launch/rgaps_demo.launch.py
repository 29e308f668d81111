"""The rmw_rgaps demo: the GPU pool daemon and demo_nodes_cpp's talker and
listener on rmw_rgaps.

    ros2 launch rmw_rgaps rgaps_demo.launch.py

The daemon owns the shared GPU pools of the host (the engine also starts it
on demand; starting it here makes its log visible). Host topics such as
/chatter need no daemon. demo_nodes_cpp must be installed; it is not a
dependency of this package (it depends on an rmw implementation itself).
"""

from launch import LaunchDescription
from launch.actions import ExecuteProcess, SetEnvironmentVariable
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([
        SetEnvironmentVariable('RMW_IMPLEMENTATION', 'rmw_rgaps'),
        ExecuteProcess(cmd=['rgaps', 'daemon'], name='rgaps_daemon', output='screen'),
        Node(package='demo_nodes_cpp', executable='talker', name='talker', output='screen'),
        Node(package='demo_nodes_cpp', executable='listener', name='listener', output='screen'),
    ])
