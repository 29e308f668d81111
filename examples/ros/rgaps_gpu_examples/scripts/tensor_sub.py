#!/usr/bin/env python3
"""tensor_sub.py [count=10]

A device subscription of the topic tensor (std_msgs/UInt8MultiArray): each
tensor arrives as an rgaps_gpu view, read without a copy through DLPack
(torch on the GPU when importable and the view is device memory, else
numpy on host memory), reshaped to layout.dim and checked against the
pattern (i*7 + k) & 255, k taken from its first byte. Prints one summary
line after count tensors; exit status 1 on a bad byte.
"""
import os
import sys

import numpy
import rclpy
import rclpy.executors
import rgaps_gpu
from std_msgs.msg import UInt8MultiArray

try:
    import torch
except ImportError:
    torch = None


# The topic's KEEP_LAST depth (RGAPS_EXAMPLES_DEPTH, default 4), as the C++ examples.
DEPTH = int(os.environ.get('RGAPS_EXAMPLES_DEPTH', '4'))


def bad_bytes(view, shape):
    """Bytes of the view that differ from the pattern of its first byte's frame."""
    if view.on_device and torch is not None:
        t = torch.from_dlpack(view).reshape(shape).flatten()
        i = torch.arange(t.numel(), device=t.device, dtype=torch.int64)
        seq = int(t[0].item())
        return int((t != ((i * 7 + seq) & 255).to(torch.uint8)).sum().item())
    if view.on_device:
        raise RuntimeError('the view is device memory and torch is not importable')
    a = numpy.asarray(view).reshape(shape).ravel()
    seq = int(a[0]) if a.size else 0
    return int(numpy.count_nonzero(a != ((numpy.arange(a.size, dtype=numpy.uint64) * 7 + seq) & 255)))


def main():
    args = rclpy.utilities.remove_ros_args(sys.argv)[1:]
    count = int(args[0]) if args else 10
    rclpy.init()
    node = rclpy.create_node('tensor_sub')
    state = {'frames': 0, 'bad': 0, 'on_device': False}

    def on_tensor(msg, view):
        shape = tuple(d.size for d in msg.layout.dim) or (view.size,)
        state['bad'] += bad_bytes(view, shape) if numpy.prod(shape) == view.size else view.size
        state['on_device'] |= view.on_device
        state['frames'] += 1
        view.release()

    if torch is not None and torch.cuda.is_available():
        torch.zeros(1, device='cuda')  # CUDA set up before the first tensor, not while tensors queue
    sub = rgaps_gpu.create_device_subscription(node, UInt8MultiArray, 'tensor', on_tensor, DEPTH)
    try:
        while rclpy.ok() and state['frames'] < count:
            rclpy.spin_once(node, timeout_sec=0.5)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass  # stopped early: the summary says how far it got
    finally:
        print('tensor_sub: frames=%(frames)d bad_bytes=%(bad)d on_device=%(on_device)d' % state, flush=True)
    node.destroy_subscription(sub)
    node.destroy_node()
    rclpy.shutdown()
    sys.exit(0 if state['bad'] == 0 else 1)


if __name__ == '__main__':
    main()
