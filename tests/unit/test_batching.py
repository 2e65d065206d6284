"""`domain.batching.leader_batches`: every item once, batches within size and of one leader,
each leader's order kept, leaders interleaved round-robin."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshness_tracker.domain.batching import leader_batches

_by_leader = st.dictionaries(
    st.integers(-1, 6), st.lists(st.integers(0, 10_000), unique=True, max_size=40), max_size=5
)


@given(_by_leader, st.integers(1, 12))
def test_every_item_once_in_batches_of_one_leader_within_size(
    by_leader: dict[int, list[int]], size: int
) -> None:
    tagged = {leader: [(leader, item) for item in items] for leader, items in by_leader.items()}
    batches = leader_batches(tagged, size)
    flat = [entry for batch in batches for entry in batch]
    assert sorted(flat) == sorted(e for items in tagged.values() for e in items)
    for batch in batches:
        assert 1 <= len(batch) <= size
        assert len({leader for leader, _ in batch}) == 1
    for leader, items in tagged.items():  # a leader's items keep their order
        assert [e for e in flat if e[0] == leader] == items


@given(_by_leader, st.integers(1, 12))
def test_leaders_take_turns(by_leader: dict[int, list[int]], size: int) -> None:
    tagged = {leader: [(leader, item) for item in items] for leader, items in by_leader.items()}
    order = [batch[0][0] for batch in leader_batches(tagged, size)]
    # round r holds the r-th batch of every leader that has one, in leader-id order
    expected = []
    rounds = max((-(-len(items) // size) for items in tagged.values()), default=0)
    for r in range(rounds):
        expected += [leader for leader, items in sorted(tagged.items())
                     if len(items) > r * size]  # fmt: skip
    assert order == expected


def test_example_and_bad_size() -> None:
    assert leader_batches({2: "abc", 1: "xyz"}, 2) == [["x", "y"], ["a", "b"], ["z"], ["c"]]
    with pytest.raises(ValueError, match="batch_size"):
        leader_batches({1: [1]}, 0)
