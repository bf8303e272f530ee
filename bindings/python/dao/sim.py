"""Simulated devices (SIM places): their number, capacities and cost profile.

``configure`` and ``set_profile`` must come before the first use of a SIM
place (any call that takes one); the environment variables
``DAO_SIM_DEVICES`` (``2x512MiB``) and ``DAO_SIM_COSTS`` do the same without
code.
"""

import ctypes

from . import _capi
from ._lib import check, load, text
from ._util import parse_size

OPS = tuple(range(_capi.DAO_SIM_OP_COUNT))


def configure(devices):
    """Set the SIM devices: a count (1 GiB each) or a list of capacities
    (ints, or strings such as "512MiB")."""
    if isinstance(devices, int):
        check(load().dao_sim_configure(devices, None))
        return
    caps = [parse_size(c) for c in devices]
    arr = (ctypes.c_size_t * max(len(caps), 1))(*caps)
    check(load().dao_sim_configure(len(caps), arr))


def set_profile(profile):
    """Choose the cost profile ("none" or "h200")."""
    check(load().dao_sim_set_profile(profile.encode()))


def profile():
    """The cost profile in effect (fixes the SIM configuration)."""
    p = ctypes.c_char_p()
    check(load().dao_sim_get_profile(ctypes.byref(p)))
    return text(p.value)


def op_name(op):
    """The name of a DAO_SIM_OP_* operation ("alloc", "map", ...)."""
    return text(load().dao_sim_op_name(op))


def cost(device, op):
    """What SIM device ``device`` accounted for one operation: a dict of
    count, bytes and ns (simulated driver time)."""
    c = _capi.dao_sim_cost()
    c.struct_size = ctypes.sizeof(c)
    check(load().dao_sim_get_cost(device, op, ctypes.byref(c)))
    return {"count": c.count, "bytes": c.bytes, "ns": c.ns}


def costs(device):
    """``cost`` of every operation, keyed by its name."""
    return {op_name(op): cost(device, op) for op in OPS}


def reset_costs(device):
    """Zero the accounted costs of a SIM device."""
    check(load().dao_sim_reset_costs(device))


def device_count():
    """Number of SIM devices (fixes the configuration)."""
    from .place import device_count as count
    return count(_capi.DAO_PLACE_SIM)
