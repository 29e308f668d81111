"""rgaps_gpu from a real rclpy node (TestRmwPython runs it when rclpy is importable).

One process: a device subscription and an ordinary one on a std_msgs/UInt8MultiArray
topic, a publisher of loans filled through the loans' array interfaces (DLPack
and the CUDA array interface with torch on a GPU machine; numpy on host memory).
Prints PASS/FAIL lines and ALL PASS at the end.
"""
import sys
import time

import rclpy
from rclpy.node import Node
from std_msgs.msg import String, UInt8MultiArray

import rgaps_gpu

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print('CHECK failed:', what, file=sys.stderr)


def pattern_host(n, seq):
    import numpy as np
    return ((np.arange(n, dtype=np.int64) * 7 + seq) & 255).astype(np.uint8)


def write(loan, seq):
    if loan.on_device:
        import torch
        t = torch.from_dlpack(loan)
        t.copy_(((torch.arange(loan.size, device=t.device, dtype=torch.int64) * 7 + seq) & 255).to(torch.uint8))
        return torch.cuda.current_stream().cuda_stream
    import numpy as np
    np.asarray(loan)[:] = pattern_host(loan.size, seq)
    return None


def matches(view, seq):
    if view.on_device:
        import torch
        t = torch.from_dlpack(view)
        want = ((torch.arange(view.size, device=t.device, dtype=torch.int64) * 7 + seq) & 255).to(torch.uint8)
        return bool(torch.equal(t, want))
    import numpy as np
    a = np.from_dlpack(view)
    return bool((a == pattern_host(view.size, seq)).all()) and not np.asarray(view).flags.writeable


def main():
    rclpy.init()
    node = Node('rgaps_gpu_check')
    views, plain = [], []
    dsub = rgaps_gpu.create_device_subscription(node, UInt8MultiArray, '/py_gpu', lambda m, v: views.append((m, v)), 10)
    node.create_subscription(UInt8MultiArray, '/py_gpu', plain.append, 10)
    pub = node.create_publisher(UInt8MultiArray, '/py_gpu', 10)
    deadline = time.time() + 5
    while pub.get_subscription_count() < 2 and time.time() < deadline:
        time.sleep(0.01)
    sizes = [1, 4097, 1 << 20]
    for seq, n in enumerate(sizes):
        loan = rgaps_gpu.borrow(pub, n)
        stream = write(loan, seq)
        msg = UInt8MultiArray()
        msg.layout.data_offset = seq
        rgaps_gpu.publish(pub, msg, loan, stream=stream)
        check(loan.size == n, 'loan size')
    deadline = time.time() + 10
    while (len(views) < len(sizes) or len(plain) < len(sizes)) and time.time() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    check(len(views) == len(sizes) and len(plain) == len(sizes), 'received %d/%d' % (len(views), len(plain)))
    for (m, v), p in zip(views, plain):
        seq = m.layout.data_offset
        check(len(m.data) == 0 and v.size == sizes[seq] and matches(v, seq), 'device view %d' % seq)
        check(bytes(p.data) == pattern_host(sizes[seq], seq).tobytes(), 'ordinary message %d' % seq)
        v.release()
    print('PASS publish_to_device_and_ordinary_subscribers')
    # A view kept past its subscription: releasing it later is harmless
    # (destroying the subscription gave the block back).
    views.clear()
    loan = rgaps_gpu.borrow(pub, 128)
    write(loan, 7)
    rgaps_gpu.publish(pub, UInt8MultiArray(), loan)
    deadline = time.time() + 10
    while not views and time.time() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    check(len(views) == 1, 'a view to keep')
    node.destroy_subscription(dsub)
    for _, v in views:
        v.release()
    views.clear()
    print('PASS view_released_after_its_subscription')
    # A loan given back, and the errors a user meets.
    loan = rgaps_gpu.borrow(pub, 64)
    loan.discard()
    try:
        rgaps_gpu.publish(pub, UInt8MultiArray(), loan)
        check(False, 'publishing a discarded loan')
    except rgaps_gpu.RgapsError as e:
        check(e.code == 11, 'discarded loan code %d' % e.code)
    try:
        rgaps_gpu.borrow(node.create_publisher(String, '/py_str', 10), 16)
        check(False, 'a loan on a type without uint8[]')
    except rgaps_gpu.RgapsError as e:
        check(e.code == 11 and 'uint8[]' in str(e), str(e))
    print('PASS errors')
    node.destroy_node()
    rclpy.shutdown()
    print('FAILURES' if failures else 'ALL PASS')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
