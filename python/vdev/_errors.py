"""The exceptions vdev raises. Messages are the command line's: ``FILE:LINE:COL: error: …``
followed by the offending line and a caret, so printing an exception shows where the input is wrong."""

from __future__ import annotations

from typing import Sequence

from vdev._records import Conflict


class Error(Exception):
    """Base class of every vdev error."""


class ParseError(Error, ValueError):
    """Bad program, device or target text. ``line`` and ``col`` count from 1 (0 when unknown)."""

    def __init__(self, text: str, *, file: str, line: int, col: int, message: str) -> None:
        super().__init__(text)
        self.file = file
        self.line = line
        self.col = col
        self.message = message

    def __str__(self) -> str:
        return str(self.args[0]).rstrip("\n")


class PlanningError(Error):
    """No placement exists: two annotations that cannot hold together, or (strict) a conflict
    between primitive uses. ``conflicts`` lists the smallest set of annotations that disagree."""

    def __init__(self, text: str, *, file: str, line: int, col: int, message: str,
                 conflicts: Sequence[Conflict] = ()) -> None:
        super().__init__(text)
        self.file = file
        self.line = line
        self.col = col
        self.message = message
        self.conflicts = list(conflicts)

    def __str__(self) -> str:
        return str(self.args[0]).rstrip("\n")


class BuildError(Error):
    """A Builder was misused (a block without a return, an unknown @name, …)."""


class LoweringError(Error):
    """Memory lowering failed (e.g. a planned tensor's device is not concrete)."""


class SessionError(Error):
    """A controller session failed: the message names the worker, the function and the command.
    The session refuses every later call."""


class RunError(Error):
    """Running a program failed: an op without a kernel (located), a worker's error."""


class ChannelError(Error, ValueError):
    """A channel program or execution plan is wrong (the validator's message names rank, thread block
    and op; a plan file's error is FILE:LINE:COL or the field's path), or running one failed (naming
    the rank)."""
