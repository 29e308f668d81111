#!/usr/bin/env python3
"""tensor_pub.py [count=10] [rows=256] [cols=1024] [subscribers=1]

Publishes count uint8 tensors of rows x cols as std_msgs/UInt8MultiArray
(layout.dim = the shape) on the topic tensor, written straight into
rgaps_gpu loans: with torch on the GPU when torch is importable and the
loan is device memory (torch.from_dlpack), else with numpy on the host
memory of the fallback. Byte i of frame k is (i*7 + k) & 255. Needs
RMW_IMPLEMENTATION=rmw_rgaps.
"""
import os
import sys
import time

import numpy
import rclpy
import rgaps_gpu
from std_msgs.msg import MultiArrayDimension, UInt8MultiArray

try:
    import torch
except ImportError:
    torch = None


# The topic's KEEP_LAST depth (RGAPS_EXAMPLES_DEPTH, default 4), as the C++ examples.
DEPTH = int(os.environ.get('RGAPS_EXAMPLES_DEPTH', '4'))


def fill(loan, seq):
    """Writes frame seq's pattern into the loan; returns the stream to publish with."""
    if loan.on_device and torch is not None:
        t = torch.from_dlpack(loan)
        t.copy_(((torch.arange(t.numel(), device=t.device, dtype=torch.int64) * 7 + seq) & 255).to(torch.uint8))
        return torch.cuda.current_stream(t.device).cuda_stream
    if loan.on_device:
        raise RuntimeError('the loan is device memory and torch is not importable')
    a = numpy.asarray(loan)
    a[:] = ((numpy.arange(a.size, dtype=numpy.uint64) * 7 + seq) & 255).astype(numpy.uint8)
    return None


def main():
    args = [int(a) for a in rclpy.utilities.remove_ros_args(sys.argv)[1:]]
    count, rows, cols, want = (args + [10, 256, 1024, 1][len(args):])[:4]
    rclpy.init()
    node = rclpy.create_node('tensor_pub')
    pub = node.create_publisher(UInt8MultiArray, 'tensor', DEPTH)
    while pub.get_subscription_count() < want:
        time.sleep(0.02)
    on_device = False
    for seq in range(count):
        loan = rgaps_gpu.borrow(pub, rows * cols)
        on_device = loan.on_device
        stream = fill(loan, seq)
        msg = UInt8MultiArray()
        msg.layout.dim = [MultiArrayDimension(label='rows', size=rows, stride=rows * cols),
                          MultiArrayDimension(label='cols', size=cols, stride=cols)]
        rgaps_gpu.publish(pub, msg, loan, stream=stream)
        time.sleep(0.05)
    print('tensor_pub: frames=%d shape=%dx%d on_device=%d torch=%d' % (count, rows, cols, on_device,
                                                                          torch is not None), flush=True)
    time.sleep(0.5)  # let reliable subscribers take the last frames
    node.destroy_node()
    rclpy.shutdown()


if __name__ == '__main__':
    main()
