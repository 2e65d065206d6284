"""domain.model: every value is built through its own checked constructor, so a missing, extra or
misspelt field is an error where the value is made, never a short or shifted tuple downstream."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from freshness_tracker.domain import model as m

VALUES = [m.PartitionKey, m.LagWindow, m.PartitionLag, m.PartitionResult, m.ReadRequest,
          m.RecordRead, m.GroupLags, m.ClusterLags, m.TopicResult, m.GroupResult, m.ClusterHealth,
          m.ClusterSnapshot, m.Snapshot]


def _fields(cls: type) -> tuple[str, ...]:
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    names: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
    return names


def _required(cls: type) -> dict[str, Any]:
    """One value for each field that has no default."""
    if dataclasses.is_dataclass(cls):
        return {f.name: f"value of {f.name}" for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    defaults: dict[str, Any] = cls._field_defaults  # type: ignore[attr-defined]
    return {name: f"value of {name}" for name in _fields(cls) if name not in defaults}


@pytest.mark.parametrize("cls", VALUES)
def test_a_value_built_by_keyword_holds_each_field_under_its_name(cls: type) -> None:
    given = {name: f"value of {name}" for name in _fields(cls)}
    built = cls(**given)
    assert {name: getattr(built, name) for name in given} == given


@pytest.mark.parametrize("cls", [c for c in VALUES if _required(c)])
def test_a_missing_field_is_a_type_error(cls: type) -> None:
    required = _required(cls)
    for name in required:
        with pytest.raises(TypeError, match=name):
            cls(**{k: v for k, v in required.items() if k != name})


@pytest.mark.parametrize("cls", VALUES)
def test_an_extra_or_misspelt_field_is_a_type_error(cls: type) -> None:
    required = _required(cls)
    with pytest.raises(TypeError, match="no_such_field"):
        cls(**required, no_such_field=1)
    with pytest.raises(TypeError):
        cls(*(f"value of {name}" for name in _fields(cls)), "one too many")


@pytest.mark.parametrize("cls", [c for c in VALUES if dataclasses.is_dataclass(c)])
def test_the_dataclasses_are_frozen_and_slotted(cls: type) -> None:
    built = cls(**_required(cls))
    assert not hasattr(built, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, _fields(cls)[0], "changed")


def test_the_partition_values_are_tuples_that_sort_and_hash_as_their_fields() -> None:
    """Keys are hashed and sorted many times a cycle: as tuples, field by field."""
    a, b = m.PartitionKey("c", "g", "t", 2), m.PartitionKey(cluster="c", consumer="g", topic="t",
                                                             partition=10)
    assert sorted([b, a]) == [a, b] and hash(a) == hash(("c", "g", "t", 2))
    request = m.ReadRequest(cluster="c", topic="t", partition=0, offset=5)
    assert {request: 1}[m.ReadRequest("c", "t", 0, 5)] == 1


def test_data_loss_is_the_data_loss_status_only() -> None:
    key = m.PartitionKey("c", "g", "t", 0)
    base = m.PartitionResult(key=key, status=m.PartitionStatus.OK, burrow_status="OK",
                             committed_offset=5, log_end_offset=6, offset_lag=1,
                             commit_time_ms=None, record_timestamp_ms=None, freshness_ms=None,
                             commit_lag_ms=None)
    for status in m.PartitionStatus:
        result = base._replace(status=status)
        assert result.data_loss is result.freshness_is_lower_bound is (
            status is m.PartitionStatus.DATA_LOSS)
    gap = m.RecordRead(request=m.ReadRequest("c", "t", 0, 5), outcome=m.ReadOutcome.GAP)
    assert gap.offset is None
