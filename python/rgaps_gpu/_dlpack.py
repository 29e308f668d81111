"""DLPack export of a block of bytes (unversioned DLManagedTensor, DLPack 0.8).

A capsule named "dltensor" holds a DLManagedTensor describing a
one-dimensional uint8 array over the block. Until the consumer calls its
deleter (or the capsule dies unconsumed), the tensor keeps a reference to the
block's owner (a Loan or a View), so the block outlives every array made from
it.
"""

import ctypes
import threading

KDL_CPU = 1
KDL_CUDA = 2
KDL_UINT = 1


class _Device(ctypes.Structure):
    _fields_ = [('device_type', ctypes.c_int32), ('device_id', ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [('code', ctypes.c_uint8), ('bits', ctypes.c_uint8), ('lanes', ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [('data', ctypes.c_void_p), ('device', _Device), ('ndim', ctypes.c_int32),
                ('dtype', _DataType), ('shape', ctypes.POINTER(ctypes.c_int64)),
                ('strides', ctypes.POINTER(ctypes.c_int64)), ('byte_offset', ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [('dl_tensor', _Tensor), ('manager_ctx', ctypes.c_void_p), ('deleter', _DELETER)]

# Exported tensors not yet given back, by address: (owner, struct, shape).
_live = {}
_lock = threading.Lock()
_NAME = b'dltensor'


def _forget(addr):
    with _lock:
        _live.pop(addr, None)


@_DELETER
def _deleter(p):
    _forget(ctypes.addressof(p.contents))


_CAPSULE_DTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.argtypes, _is_valid.restype = [ctypes.c_void_p, ctypes.c_char_p], ctypes.c_int
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.argtypes, _get_pointer.restype = [ctypes.c_void_p, ctypes.c_char_p], ctypes.c_void_p
_new = ctypes.pythonapi.PyCapsule_New
_new.argtypes, _new.restype = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DTOR], ctypes.py_object


@_CAPSULE_DTOR
def _capsule_dtor(cap):
    # Still named "dltensor": nobody consumed it (a consumer renames it).
    if _is_valid(cap, _NAME):
        _forget(_get_pointer(cap, _NAME))


def device(on_device, ordinal):
    """The (device type, device id) pair __dlpack_device__ returns."""
    return (KDL_CUDA, ordinal) if on_device else (KDL_CPU, 0)


def capsule(owner, ptr, size, on_device, ordinal):
    """A DLPack capsule of size bytes at ptr, keeping owner alive until given back."""
    shape = (ctypes.c_int64 * 1)(size)
    m = _Managed()
    m.dl_tensor.data = ptr
    m.dl_tensor.device = _Device(*device(on_device, ordinal))
    m.dl_tensor.ndim = 1
    m.dl_tensor.dtype = _DataType(KDL_UINT, 8, 1)
    m.dl_tensor.shape = shape
    m.dl_tensor.strides = None
    m.dl_tensor.byte_offset = 0
    m.deleter = _deleter
    addr = ctypes.addressof(m)
    with _lock:
        _live[addr] = (owner, m, shape)
    return _new(addr, _NAME, _capsule_dtor)
