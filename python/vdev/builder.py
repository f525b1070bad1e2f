"""vdev.Builder: build programs from Python, the same programs the text format writes.

    with vdev.Builder() as b:
        t = b.tensor_type("f32", [5, 7])
        with b.function("main", result=t):
            x, y = b.param("x", t), b.param("y", t)
            s = b.on_device(b.op("add", x, y), "cpu:0")
            b.ret(b.op("negative", s))
    module = b.module        # verified when the ``with`` block ends

Blocks open and close with ``with``: ``function``, ``kernel``, ``fn`` (a local function) and ``if_``.
Operands are Values, VirtualDevices, ``vdev.Global('f')``, numbers, lists of ints, booleans and
(as attribute values) identifier strings such as ``op="sum"``: ``b.op("allreduce", y, op="sum")``
(the op's own name is positional-only, so an attribute may be called ``op``).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

from vdev._errors import BuildError
from vdev._vdev import Module, Type, Value, VirtualDevice, _Builder

DeviceLike = Union[VirtualDevice, str]


def _device(device: DeviceLike) -> VirtualDevice:
    return device if isinstance(device, VirtualDevice) else VirtualDevice.parse(device)


class Arm:
    """The open ``if`` of ``with b.if_(cond) as arm``: ``arm.orelse()`` starts the else arm; after
    the ``with`` block, ``arm.value`` is the binding holding the ``if``."""

    def __init__(self, builder: "Builder") -> None:
        self._builder = builder
        self.value: Optional[Value] = None

    def orelse(self) -> None:
        self._builder.begin_else()


class Closure:
    """The open local function of ``with b.fn(...) as f``; after the block, ``f.value`` holds it."""

    def __init__(self) -> None:
        self.value: Optional[Value] = None


class Builder(_Builder):
    """Builds a Module; a context manager that verifies the module when its block ends."""

    def __init__(self, file: str = "<builder>") -> None:
        super().__init__()
        self._file = file
        self._module: Optional[Module] = None

    def __enter__(self) -> "Builder":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if exc_type is None and self._module is None:
            self.finish()
        return False

    def finish(self, file: Optional[str] = None) -> Module:  # type: ignore[override]
        """Resolves @names and verifies; BuildError on misuse. The builder cannot be used after."""
        self._module = super().finish(file or self._file)
        return self._module

    @property
    def module(self) -> Module:
        if self._module is None:
            raise BuildError("the module is made when the `with Builder()` block ends (or by finish())")
        return self._module

    def config(self, *, targets: Optional[Sequence[str]] = None, default: Optional[DeviceLike] = None,
               host: Optional[DeviceLike] = None) -> None:
        """``config { targets = […], default = vd, host = vd }``."""
        if targets is not None:
            self.set_targets(list(targets))
        if default is not None:
            self.set_default_device(default)
        if host is not None:
            self.set_host_device(host)

    @contextmanager
    def function(self, name: str, *, result: Optional[Type] = None,
                 result_device: Optional[DeviceLike] = None) -> Iterator[None]:
        """``def @name(…) [-> result [on result_device]] { … }``; parameters with ``param``."""
        self.begin_function(name)
        yield
        if result is not None:
            self.set_result(result, result_device)
        self.end_function()

    @contextmanager
    def kernel(self, name: str, *, result: Type, result_device: Optional[DeviceLike] = None) -> Iterator[None]:
        """``kernel @name(…) -> result``: a body-less function; parameters with ``param``."""
        self.begin_kernel(name)
        yield
        self.set_result(result, result_device)
        self.end_kernel()

    @contextmanager
    def fn(self, *, name: str = "", result: Optional[Type] = None, result_device: Optional[DeviceLike] = None,
           primitive: bool = False) -> Iterator[Closure]:
        """``%name = fn[primitive](…) { … }`` in the current block."""
        closure = Closure()
        self.begin_fn(name, primitive)
        yield closure
        if result is not None:
            self.set_result(result, result_device)
        closure.value = self.end_fn()

    @contextmanager
    def if_(self, cond: Value, *, name: str = "") -> Iterator[Arm]:
        """``%name = if cond { … } else { … }``: each arm ends with ``ret``."""
        arm = Arm(self)
        self.begin_if(cond, name)
        yield arm
        arm.value = self.end_if()

    def op(self, op_name: str, /, *args: Any, name: str = "", type: Optional[Type] = None,  # type: ignore[override]
           attrs: Optional[Mapping[str, Any]] = None, **more_attrs: Any) -> Value:
        """``%name = op_name(args…, key=value…)``: every keyword but ``name``, ``type`` and ``attrs``
        is an attribute (``b.op("allreduce", y, op="sum")``); attributes with those three names go in
        ``attrs={"name": …}``. ``name`` names the binding, ``type`` writes its type."""
        all_attrs = dict(attrs or {})
        for key, value in more_attrs.items():
            if key in all_attrs:
                raise BuildError(f"attribute '{key}' given twice (in attrs and as a keyword)")
            all_attrs[key] = value
        return _Builder.op(self, op_name, list(args), all_attrs, name, type)

    def on_device(self, value: Value, device: DeviceLike, *, constrain_body: Optional[bool] = None,
                  constrain_result: Optional[bool] = None, name: str = "") -> Value:
        """``on_device(value, device, …)``: where ``value`` must live."""
        attrs = {k: v for k, v in (("constrain_body", constrain_body), ("constrain_result", constrain_result))
                 if v is not None}
        return self.op("on_device", value, _device(device), name=name, **attrs)

    def device_copy(self, value: Value, src: DeviceLike, dst: DeviceLike, *, name: str = "") -> Value:
        """``device_copy(value, src=…, dst=…)``."""
        return self.op("device_copy", value, name=name, src=_device(src), dst=_device(dst))

    def call(self, callee: Union[str, Value], *args: Any, name: str = "") -> Value:  # type: ignore[override]
        """``@callee(args…)`` for a global name, ``%callee(args…)`` for a Value."""
        if isinstance(callee, Value):
            return self.call_value(callee, list(args), name)
        return _Builder.call(self, callee, list(args), name)
