"""The state of a merged conjunction: every keyword of its subschemas, collected per JSON type.

:class:`Merged` holds what ``_norm._Norm`` collects from a conjunction of
plain subschemas (types, bounds, properties, items...); the object and array
lowerings (``_lower_objects``, ``_lower_arrays``) read it, and ``_Norm`` adds
the merging of keywords and the other types' lowering.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ...ir.nodes import Node
from ._load import Loc
from ._values import ALL_TYPES, Lowering

__all__ = ["Merged"]


class _ObjComp:
    """One schema's ``properties``/``patternProperties``/``additionalProperties``."""

    def __init__(self, ptr: str) -> None:
        self.ptr = ptr
        self.props: dict[str, Loc] = {}
        self.patterns: list[tuple[str, Loc, str]] = []
        self.additional: Loc | None = None


class _ArrComp:
    """One schema's ``prefixItems``/``items``."""

    def __init__(self, ptr: str) -> None:
        self.ptr = ptr
        self.prefix: list[Loc] = []
        self.items: Loc | None = None


class Merged(ABC):
    """Every constraint of a conjunction, merged per JSON type (the fields; see ``_norm._Norm``)."""

    def __init__(self, low: Lowering, *, summary: bool = False) -> None:
        self.low = low
        self.summary = summary
        self.locs: list[Loc] = []
        self.ptr = ""
        self.types: frozenset[str] = ALL_TYPES
        self.enum: list[Any] | None = None
        self.enum_ptr = ""
        self.notin: list[Any] = []
        # strings
        self.min_len = 0
        self.max_len: int | None = None
        self.patterns: list[tuple[str, str]] = []
        self.neg_patterns: list[tuple[str, str]] = []
        self.formats: list[tuple[str, str]] = []
        # numbers
        self.lo: tuple[Any, bool] | None = None
        self.hi: tuple[Any, bool] | None = None
        self.multiples: list[tuple[Any, str]] = []
        # arrays
        self.arr: list[_ArrComp] = []
        self.min_items = 0
        self.max_items: int | None = None
        self.contains: list[tuple[Loc, int, int | None, str]] = []
        self.unique: str | None = None
        # objects
        self.obj: list[_ObjComp] = []
        self.required: list[str] = []
        self.forbid: set[str] = set()
        self.prop_names: list[Loc] = []
        self.min_props = 0
        self.max_props: int | None = None
        self.dep_required: dict[str, set[str]] = {}
        self.where: dict[str, str] = {}
        self.nonint = False
        self._eff_types: frozenset[str] | None = None
        self._keys: set[Any] | None = None

    def _unsupported(self, ptr: str, kw: str, why: str) -> None:
        if not self.summary:
            self.low.unsupported(ptr, kw, why)

    @abstractmethod
    def add(self, loc: Loc) -> None:
        """Merge the keywords of one plain subschema."""

    @abstractmethod
    def string_content(self) -> Node:
        """The content (between the quotes) of the strings the constraints allow."""
