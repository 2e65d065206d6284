"""domain.model.from_fields: the hot loops' constructors build the very values the classes do."""

from __future__ import annotations

import pytest

from freshness_tracker.domain.model import (
    LagWindow,
    PartitionKey,
    PartitionLag,
    PartitionResult,
    ReadRequest,
    RecordRead,
    from_fields,
)


@pytest.mark.parametrize("cls", [PartitionKey, LagWindow, PartitionLag, PartitionResult,
                                 ReadRequest, RecordRead])
def test_from_fields_equals_the_generated_constructor(cls: type) -> None:
    values = tuple(f"value of {name}" for name in cls._fields)
    built = from_fields(cls)(values)
    assert type(built) is cls and built == cls(*values)
    assert [getattr(built, name) for name in cls._fields] == list(values)
    assert hash(built) == hash(cls(*values))
