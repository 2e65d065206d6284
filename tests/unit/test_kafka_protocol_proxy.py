"""Byte-exact checks of the ListOffsets v0 <-> v1 rewriting done by the dev-stack proxy.

Frames are built by hand from the Kafka protocol spec, not with the code under test.
"""

from __future__ import annotations

import struct

import pytest

from freshness_tracker.devstack.bridge import offset_commit_key, offset_commit_value
from freshness_tracker.devstack.proxy import (
    list_offsets_request_v0_to_v1,
    list_offsets_response_v1_to_v0,
)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s(v: str) -> bytes:
    return i16(len(v)) + v.encode()


def header(version: int, corr: int, client: bytes) -> bytes:
    return i16(2) + i16(version) + i32(corr) + client


def test_request_v0_becomes_v1_without_max_num_offsets() -> None:
    v0 = (
        header(0, 42, s("sarama"))
        + i32(-1)  # replica_id
        + i32(2)  # topics
        + s("orders")
        + i32(2)
        + i32(0) + i64(-1) + i32(1)  # partition 0, latest, max 1
        + i32(7) + i64(-2) + i32(1)  # partition 7, earliest, max 1
        + s("t")
        + i32(1)
        + i32(3) + i64(1_700_000_000_000) + i32(5)
    )  # fmt: skip
    v1 = (
        header(1, 42, s("sarama"))
        + i32(-1)
        + i32(2)
        + s("orders")
        + i32(2)
        + i32(0) + i64(-1)
        + i32(7) + i64(-2)
        + s("t")
        + i32(1)
        + i32(3) + i64(1_700_000_000_000)
    )  # fmt: skip
    assert list_offsets_request_v0_to_v1(v0) == v1


def test_request_with_null_client_id_and_no_topics() -> None:
    v0 = header(0, 1, i16(-1)) + i32(-1) + i32(0)
    assert list_offsets_request_v0_to_v1(v0) == header(1, 1, i16(-1)) + i32(-1) + i32(0)


@pytest.mark.parametrize(
    "frame",
    [
        header(1, 1, s("c")) + i32(-1) + i32(0),  # already v1
        i16(1) + i16(0) + i32(1) + s("c"),  # a Fetch request
        header(0, 1, s("c")) + i32(-1) + i32(1) + s("t") + i32(1) + i32(0),  # truncated
        header(0, 1, s("c")) + i32(-1) + i32(0) + b"\x00",  # trailing byte
    ],
)
def test_request_rewrite_rejects_other_frames(frame: bytes) -> None:
    with pytest.raises(ValueError):
        list_offsets_request_v0_to_v1(frame)


def test_response_v1_becomes_v0_old_style_offsets() -> None:
    v1 = (
        i32(42)  # correlation id
        + i32(2)
        + s("orders")
        + i32(3)
        + i32(0) + i16(0) + i64(-1) + i64(1234)  # ok
        + i32(1) + i16(3) + i64(-1) + i64(-1)  # UNKNOWN_TOPIC_OR_PARTITION
        + i32(2) + i16(0) + i64(-1) + i64(-1)  # no offset
        + s("t")
        + i32(1)
        + i32(5) + i16(0) + i64(1_700_000_000_000) + i64(0)
    )  # fmt: skip
    v0 = (
        i32(42)
        + i32(2)
        + s("orders")
        + i32(3)
        + i32(0) + i16(0) + i32(1) + i64(1234)
        + i32(1) + i16(3) + i32(0)
        + i32(2) + i16(0) + i32(0)
        + s("t")
        + i32(1)
        + i32(5) + i16(0) + i32(1) + i64(0)
    )  # fmt: skip
    assert list_offsets_response_v1_to_v0(v1) == v0


def test_response_rewrite_rejects_truncated_frame() -> None:
    with pytest.raises(ValueError):
        list_offsets_response_v1_to_v0(i32(1) + i32(1) + s("t") + i32(1) + i32(0) + i16(0))


def test_offset_commit_record_layout() -> None:
    assert offset_commit_key("g", "topic", 3) == i16(1) + s("g") + s("topic") + i32(3)
    assert offset_commit_value(17, 1_000, 2_000) == (
        i16(1) + i64(17) + s("") + i64(1_000) + i64(2_000)
    )
