"""Hypothesis strategies for vdev values, so users property-test their own passes.

    from hypothesis import given
    import vdev, vdev.testing as vt

    @given(vt.virtual_devices(), vt.virtual_devices())
    def test_join_commutes(a, b):
        assert a.join(b) == b.join(a)

    @given(vt.modules())
    def test_my_pass_keeps_planning(module):
        vdev.plan(my_pass(module))

Each strategy draws from few values per field, so that agreements and conflicts are both common
(the lattice laws are about them); pass wider choices to widen it. The C++ counterpart,
tests/testing/arbitrary.h (RapidCheck), draws from the same 54 devices and program grammar.
"""

from __future__ import annotations

from typing import Optional, Sequence

from hypothesis import strategies as st

import vdev

# The targets of each device type (None: no target).
_TARGETS = {
    None: [None],
    "cpu": [None, "llvm"],
    "cuda": [None, "cuda", "cuda -arch=sm_90"],
}


def device_types(types: Sequence[Optional[str]] = (None, "cpu", "cuda")) -> st.SearchStrategy[Optional[str]]:
    """A device type name, or None (unconstrained)."""
    return st.sampled_from(list(types))


def targets(device_type: Optional[str] = None) -> st.SearchStrategy[vdev.Target]:
    """A Target; of `device_type` when given, else of any type vdev.testing knows."""
    texts = [t for ty, ts in _TARGETS.items() if device_type in (None, ty) for t in ts if t is not None]
    return st.sampled_from(sorted(set(texts))).map(vdev.Target)


def virtual_devices(types: Sequence[Optional[str]] = (None, "cpu", "cuda"),
                    ids: Sequence[Optional[int]] = (None, 0, 1),
                    scopes: Sequence[Optional[str]] = (None, "global", "ipc_memory")
                    ) -> st.SearchStrategy[vdev.VirtualDevice]:
    """A valid VirtualDevice over the given field values (its target agrees with its type).

    Drawn from the list of every such device (one draw each: cheap enough for thousands of examples
    in the law tests), shrinking towards `?`."""
    domain = [vdev.VirtualDevice(device_type=ty, device_id=i, target=t, memory_scope=sc)
              for ty in types for t in _TARGETS.get(ty, [None]) for i in ids for sc in scopes]
    return st.sampled_from(domain)


def device_literals(**fields: Sequence) -> st.SearchStrategy[str]:
    """The canonical literal of a drawn VirtualDevice (`cuda:0/global`, `?`, …)."""
    return virtual_devices(**fields).map(str)


_ANNOTATIONS = ["cpu:0", "cuda:0", "cuda:1", "/global", "cuda", "*:1"]


@st.composite
def programs(draw: st.DrawFn, max_bindings: int = 12, devices: Sequence[str] = tuple(_ANNOTATIONS)) -> str:
    """The text of a small well-formed program: a straight-line @main over two tensors with adds,
    negations, tuples and projections, `on_device` annotations (normal, pinned and free), `if`s and
    `device_copy`s. It always parses and verifies; planning it may warn (conflicting primitive uses)
    or fail with a PlanningError (annotations that cannot hold together, e.g. two `if`s pinning
    arms of one value to different devices): tests that need a plan skip those with `assume`."""
    n = draw(st.integers(min_value=1, max_value=max_bindings))
    lines = ["def @main(%p: f32[4], %q: f32[4], %c: bool[]) -> f32[4] {"]
    values = ["%p", "%q"]
    for i in range(n):
        pick = lambda: draw(st.sampled_from(values))  # noqa: E731 (draws from the values so far)
        device = draw(st.sampled_from(list(devices)))
        kind = draw(st.integers(min_value=0, max_value=7))
        name = f"%v{i}"
        if kind == 0:
            lines.append(f"  {name} = add({pick()}, {pick()})")
        elif kind == 1:
            lines.append(f"  {name} = negative({pick()})")
        elif kind == 2:
            lines.append(f"  {name} = on_device({pick()}, {device})")
        elif kind == 3:
            lines.append(f"  {name} = on_device({pick()}, {device}, constrain_result=true)")
        elif kind == 4:
            lines.append(f"  {name} = on_device({pick()}, ?, constrain_body=false, constrain_result=false)")
        elif kind == 5:
            lines += [f"  %t{i} = ({pick()}, {pick()})", f"  {name} = %t{i}.{draw(st.integers(0, 1))}"]
        elif kind == 6:
            lines += [f"  {name} = if %c {{", f"    %x{i} = negative({pick()})",
                      f"    %y{i} = on_device(%x{i}, {device})", f"    return %y{i}", "  } else {",
                      f"    return {pick()}", "  }"]
        else:
            other = draw(st.sampled_from(list(devices)))
            lines.append(f"  {name} = device_copy({pick()}, src={device}, dst={other})")
        values.append(name)
    lines += [f"  return {values[-1]}", "}", ""]
    return "\n".join(lines)


def modules(max_bindings: int = 12) -> st.SearchStrategy[vdev.Module]:
    """A parsed, verified Module of `programs(max_bindings)`."""
    return programs(max_bindings=max_bindings).map(lambda text: vdev.parse(text, file="<hypothesis>"))
