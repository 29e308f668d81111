"""GPU-loaned messages from rclpy nodes on rmw_rgaps.

    import rgaps_gpu, torch
    pub = node.create_publisher(Image, 'camera/image', 10)
    loan = rgaps_gpu.borrow(pub, nbytes)            # a block of the topic's GPU pool
    torch.from_dlpack(loan).copy_(frame.view(torch.uint8).flatten())
    meta = Image(height=h, width=w, encoding='rgba8', step=4 * w)
    rgaps_gpu.publish(pub, meta, loan, stream=torch.cuda.current_stream().cuda_stream)

    def on_image(meta, view):                       # view: the data field, on the GPU
        t = torch.from_dlpack(view)                 # no copy; keeps the block until freed
    sub = rgaps_gpu.create_device_subscription(node, Image, 'camera/image', on_image, 10)

Loans and views export their bytes as a one-dimensional uint8 array through
DLPack (__dlpack__, __dlpack_device__: torch.from_dlpack, cupy.from_dlpack,
numpy.from_dlpack for host memory) and __cuda_array_interface__ (version 3;
__array_interface__ for host memory). A view is read-only: other
subscribers read the same bytes (DLPack 0.8 cannot say so; the array
interfaces do). The block stays held while the view or any array made from
it lives, or until view.release(), and at most until the subscription is
destroyed; work queued on it (kernels reading it) must be done before
then: the block goes back to the pool for the next message.

Without a GPU the same calls work on host memory (on_device is False). The
module is pure Python over the C entry points of librmw_rgaps.so
(include/rgaps/gpu.h, ABI version 1), found in the running process; it needs
RMW_IMPLEMENTATION=rmw_rgaps.
"""

import ctypes
import os
import threading

from . import _dlpack

__all__ = ['Loan', 'View', 'borrow', 'publish', 'discard', 'create_device_subscription',
           'device_field', 'RgapsError', 'ABI_VERSION']

ABI_VERSION = 1
ON_DEVICE = 0x1
TICKET_SIZE = 32
SYNC_CONTEXT = ctypes.c_void_p(2**64 - 1)


class RgapsError(RuntimeError):
    """A failed call: the message is the rmw's, code the rmw_ret_t."""

    def __init__(self, what, code):
        super().__init__(what)
        self.code = code


class _Loan(ctypes.Structure):
    _fields_ = [('ptr', ctypes.c_void_p), ('size', ctypes.c_uint64), ('flags', ctypes.c_uint32),
                ('device', ctypes.c_int32), ('id', ctypes.c_uint64)]


_View = _Loan  # rgaps_gpu_view_v1 has the same layout


class _Api:
    """The entry points of the loaded librmw_rgaps.so and rcl's handle getters."""

    _lock = threading.Lock()
    _api = None

    @classmethod
    def get(cls):
        with cls._lock:
            if cls._api is None:
                cls._api = cls()
            return cls._api

    def __init__(self):
        mode = os.RTLD_NOLOAD | os.RTLD_LAZY
        try:
            lib = ctypes.CDLL('librmw_rgaps.so', mode=mode)
            rcl = ctypes.CDLL('librcl.so', mode=mode)
        except OSError as e:
            raise RgapsError('rgaps_gpu: librmw_rgaps.so is not loaded in this process '
                             '(run with RMW_IMPLEMENTATION=rmw_rgaps and create a node first): %s' % e, 3)
        if lib.rgaps_gpu_abi_version() < ABI_VERSION:
            raise RgapsError('rgaps_gpu: librmw_rgaps.so is older than GPU ABI version 1', 3)
        vp, u64, sz = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t
        lp = ctypes.POINTER(_Loan)
        sig = {
            'rgaps_gpu_publisher_borrow_v1': [vp, u64, lp],
            'rgaps_gpu_publisher_publish_serialized_v1': [vp, ctypes.c_char_p, sz, ctypes.c_char_p, lp, vp],
            'rgaps_gpu_publisher_discard_v1': [vp, lp],
            'rgaps_gpu_subscription_set_device_v1': [vp, ctypes.c_char_p],
            'rgaps_gpu_subscription_claim_v1': [vp, ctypes.c_char_p, sz, lp],
            'rgaps_gpu_subscription_release_v1': [vp, lp],
        }
        for name, args in sig.items():
            f = getattr(lib, name)
            f.argtypes, f.restype = args, ctypes.c_int32
            setattr(self, name[len('rgaps_gpu_'):-len('_v1')], f)
        self.last_error = lib.rgaps_gpu_last_error_v1
        self.last_error.restype = ctypes.c_char_p
        self.pub_handle = rcl.rcl_publisher_get_rmw_handle
        self.sub_handle = rcl.rcl_subscription_get_rmw_handle
        for f in (self.pub_handle, self.sub_handle):
            f.argtypes, f.restype = [vp], vp

    def check(self, rc, what):
        if rc != 0:
            raise RgapsError('rgaps_gpu: %s: %s' % (what, self.last_error().decode(errors='replace')), rc)


class _Identified(ctypes.Structure):
    # The first field of rmw_publisher_t and rmw_subscription_t.
    _fields_ = [('implementation_identifier', ctypes.c_char_p)]


def _rmw_handle(entity, getter, what):
    with entity.handle:
        h = getter(entity.handle.pointer)
    if not h or _Identified.from_address(h).implementation_identifier != b'rmw_rgaps':
        raise RgapsError('rgaps_gpu: the %s is not on rmw_rgaps (RMW_IMPLEMENTATION=rmw_rgaps)' % what, 12)
    return h


def device_field(msg_type, field=None):
    """The device field of msg_type: field, else 'data', else its only top-level uint8[] field."""
    fields = msg_type.get_fields_and_field_types()
    byte_fields = [n for n, t in fields.items()
                   if t.startswith('sequence<uint8') or t.startswith('sequence<octet') or t.startswith('sequence<char')]
    if field is not None:
        if field not in byte_fields:
            raise RgapsError('rgaps_gpu: %s has no uint8[] field %r (it has %s)'
                             % (msg_type.__name__, field, byte_fields or 'none'), 11)
        return field
    if 'data' in byte_fields:
        return 'data'
    if len(byte_fields) == 1:
        return byte_fields[0]
    raise RgapsError('rgaps_gpu: %s has %s; name the device field' % (
        msg_type.__name__, 'uint8[] fields %s' % byte_fields if byte_fields else 'no uint8[] field'), 11)


class _Block:
    """What loans and views share: the bytes' address, size and device, exported as arrays."""

    def __init__(self, s, readonly):
        self._s = s
        self._readonly = readonly

    @property
    def ptr(self):
        """The address of the bytes (a CUDA device address when on_device)."""
        return self._s.ptr or 0

    @property
    def size(self):
        return self._s.size

    @property
    def on_device(self):
        return bool(self._s.flags & ON_DEVICE)

    @property
    def device(self):
        """The CUDA device ordinal, or -1 for host memory."""
        return self._s.device

    def _live(self):
        if not self._s.id:
            raise RgapsError('rgaps_gpu: the block was published, discarded or released', 11)

    def __dlpack_device__(self):
        self._live()
        return _dlpack.device(self.on_device, self.device)

    def __dlpack__(self, stream=None, **kwargs):
        # The bytes are complete before a view exists (the publisher's writes
        # were waited for) and a loan's writes are ordered by publish(stream):
        # no synchronisation is owed to the consumer's stream.
        self._live()
        return _dlpack.capsule(self, self.ptr, self.size, self.on_device, self.device)

    @property
    def __cuda_array_interface__(self):
        self._live()
        if not self.on_device:
            raise AttributeError('host memory: use __array_interface__')
        return {'shape': (self.size,), 'typestr': '|u1', 'data': (self.ptr, self._readonly),
                'version': 3, 'strides': None, 'stream': None}

    @property
    def __array_interface__(self):
        self._live()
        if self.on_device:
            raise AttributeError('device memory: use __cuda_array_interface__ or __dlpack__')
        return {'shape': (self.size,), 'typestr': '|u1', 'data': (self.ptr, self._readonly), 'version': 3}


class Loan(_Block):
    """A block lent to a publisher: write it, then publish() or discard() it."""

    def __init__(self, publisher, nbytes):
        api = _Api.get()
        self._h = _rmw_handle(publisher, api.pub_handle, 'publisher')
        s = _Loan()
        api.check(api.publisher_borrow(self._h, nbytes, ctypes.byref(s)), 'borrowing %d bytes' % nbytes)
        super().__init__(s, False)
        self._entity = publisher

    def discard(self):
        if self._s.id:
            api = _Api.get()
            rc = _while_alive(self._entity, lambda: api.publisher_discard(self._h, ctypes.byref(self._s)))
            self._s.id = 0
            api.check(rc, 'discarding the loan')

    def __del__(self):
        try:
            self.discard()
        except Exception:
            pass


class View(_Block):
    """A received block (read-only), held until released or garbage collected."""

    def __init__(self, subscription, handle, ticket):
        api = _Api.get()
        s = _View()
        api.check(api.subscription_claim(handle, ticket, len(ticket), ctypes.byref(s)), 'claiming the view')
        super().__init__(s, True)
        self._h = handle
        self._entity = subscription

    def release(self):
        """Gives the block back. Work queued on it (kernels reading it) must be done first."""
        if self._s.id:
            api = _Api.get()
            rc = _while_alive(self._entity, lambda: api.subscription_release(self._h, ctypes.byref(self._s)))
            self._s.id = 0
            api.check(rc, 'releasing the view')

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass


def _while_alive(entity, call):
    """call() while the rclpy entity's handle is alive; 0 (nothing to do) once it
    was destroyed: destroying a subscription or publisher gives its blocks back."""
    try:
        with entity.handle:
            return call()
    except Exception as e:  # rclpy's InvalidHandle: the entity was destroyed
        if type(e).__name__ == 'InvalidHandle':
            return 0
        raise


def _field_bytes(value):
    """The bytes of a uint8[] (array of ints) or byte[] (list of 1-byte bytes) field."""
    if len(value) and isinstance(value[0], bytes):
        return b''.join(value)
    return bytes(value)


def borrow(publisher, nbytes):
    """Lends nbytes of the rclpy publisher's topic pool (device memory when the host has a GPU)."""
    return Loan(publisher, int(nbytes))


def discard(loan):
    loan.discard()


def publish(publisher, msg, loan, stream=None, field=None):
    """Publishes msg with its device field replaced by loan (consumed).

    stream: the CUDA stream (an int handle, e.g. torch.cuda.current_stream().cuda_stream)
    the writes into the loan were queued on; None for the legacy default stream,
    SYNC_CONTEXT for all of the process's device work.
    """
    from rclpy.serialization import serialize_message
    name = device_field(type(msg), field)
    keep = getattr(msg, name)
    setattr(msg, name, [])
    try:
        cdr = serialize_message(msg)
    finally:
        setattr(msg, name, keep)
    api = _Api.get()
    if loan._h != _rmw_handle(publisher, api.pub_handle, 'publisher'):
        raise RgapsError('rgaps_gpu: the loan is not of this publisher', 11)
    loan._live()
    rc = api.publisher_publish_serialized(loan._h, cdr, len(cdr), name.encode() if field else None,
                                          ctypes.byref(loan._s), stream if stream is not None else None)
    loan._s.id = 0  # consumed whatever the result
    api.check(rc, 'publishing')


def create_device_subscription(node, msg_type, topic, callback, qos_profile, field=None, **kwargs):
    """An rclpy subscription whose callback(msg, view) gets the message's other
    fields and a View of its device field (device memory of this host's pool)."""
    name = device_field(msg_type, field)
    state = {}

    def on_message(msg):
        h = state.get('h')
        if h is None:
            return  # taken before it became a device subscription
        ticket = _field_bytes(getattr(msg, name))
        setattr(msg, name, [])
        callback(msg, View(sub, h, ticket))

    sub = node.create_subscription(msg_type, topic, on_message, qos_profile, **kwargs)
    api = _Api.get()
    h = _rmw_handle(sub, api.sub_handle, 'subscription')
    api.check(api.subscription_set_device(h, name.encode() if field else None), 'making a device subscription')
    state['h'] = h
    return sub

