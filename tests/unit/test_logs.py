"""Log lines are one machine-readable record each: logfmt values escaped, not
mangled, so any message parses back to itself; timestamps RFC 3339 UTC with milliseconds."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import re

from hypothesis import given
from hypothesis import strategies as st

from devstack.logfmt import parse_logfmt
from freshness_tracker.logs import formatter, logfmt_value

_RFC3339_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def _emit(fmt: str, msg: str, *, exc: BaseException | None = None) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter(fmt))
    logger = logging.getLogger("freshness_tracker.test")
    logger.propagate = False  # only this handler: not pytest's, not the root's
    logger.addHandler(handler)
    try:
        if exc is None:
            logger.warning("%s", msg)
        else:
            try:
                raise exc
            except BaseException:
                logger.exception("%s", msg)
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1, f"not one line: {text!r}"
    return text[:-1]


@given(st.text())
def test_any_message_is_one_logfmt_line_that_parses_back_to_itself(msg: str) -> None:
    fields = parse_logfmt(_emit("logfmt", msg))
    assert fields["msg"] == msg
    assert fields["level"] == "warning" and fields["logger"] == "freshness_tracker.test"
    assert _RFC3339_MS.fullmatch(fields["ts"])


@given(st.text())
def test_any_value_round_trips_and_is_printable(value: str) -> None:
    encoded = logfmt_value(value)
    assert encoded.isprintable()  # no control, separator or lone surrogate reaches the log
    assert parse_logfmt(f"k={encoded}") == {"k": value}


def test_quotes_backslashes_and_newlines_are_escaped_not_replaced() -> None:
    line = _emit("logfmt", 'group "billing" at C:\\data\nnext')
    assert r'msg="group \"billing\" at C:\\data\nnext"' in line
    assert logfmt_value("up=false") == '"up=false"'
    assert logfmt_value("") == '""'
    assert logfmt_value("cycle") == "cycle"
    assert logfmt_value("t\udc80x") == '"t\\udc80x"'
    assert logfmt_value("a\u2028b") == '"a\\u2028b"'  # a line separator to some readers


def test_a_traceback_stays_on_the_line_and_parses_back() -> None:
    fields = parse_logfmt(_emit("logfmt", "cycle failed", exc=ValueError('bad "x"')))
    assert fields["msg"] == "cycle failed"
    assert fields["exc"].startswith("Traceback (most recent call last):\n")
    assert fields["exc"].endswith('ValueError: bad "x"')


def test_json_lines_carry_an_rfc3339_timestamp_with_milliseconds() -> None:
    before = dt.datetime.now(dt.UTC)
    body = json.loads(_emit("json", 'a "quoted"\nmessage', exc=KeyError("k")))
    after = dt.datetime.now(dt.UTC)
    assert isinstance(body["ts"], str) and _RFC3339_MS.fullmatch(body["ts"])
    stamp = dt.datetime.fromisoformat(body["ts"])
    assert stamp.utcoffset() == dt.timedelta(0)
    assert before - dt.timedelta(milliseconds=1) <= stamp <= after
    assert body["msg"] == 'a "quoted"\nmessage' and body["level"] == "error"
    assert body["exc"].endswith("KeyError: 'k'")
