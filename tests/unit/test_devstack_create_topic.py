"""devstack's topic creation asks again when librdkafka lost the answer (it drops the bootstrap
broker's handle once it learns that broker's id), and never hides a refusal."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from devstack.stack import create_topic_once


class _Admin:
    """Answers each create_topics with the next of `errors` (None: created)."""

    def __init__(self, *errors: int | None) -> None:
        self.errors = list(errors)
        self.asked = 0

    def create_topics(self, topics: list[NewTopic], **_: Any) -> dict[str, Future[None]]:
        self.asked += 1
        future: Future[None] = Future()
        code = self.errors.pop(0)
        if code is None:
            future.set_result(None)
        else:
            future.set_exception(KafkaException(KafkaError(code)))
        return {topics[0].topic: future}


def test_a_lost_answer_is_asked_again_and_already_exists_then_means_created() -> None:
    admin = _Admin(KafkaError._DESTROY_BROKER, KafkaError.TOPIC_ALREADY_EXISTS)
    create_topic_once(lambda: admin, NewTopic("t", 1, 1), 5.0)  # type: ignore[arg-type,return-value]
    assert admin.asked == 2


def test_a_topic_that_exists_at_the_first_ask_is_a_refusal() -> None:
    admin = _Admin(KafkaError.TOPIC_ALREADY_EXISTS)
    with pytest.raises(RuntimeError, match="cannot create topic t"):
        create_topic_once(lambda: admin, NewTopic("t", 1, 1), 5.0)  # type: ignore[arg-type,return-value]
    assert admin.asked == 1


def test_answers_lost_every_time_give_up_after_three_asks() -> None:
    admin = _Admin(*[KafkaError._DESTROY_BROKER] * 3)
    with pytest.raises(RuntimeError, match="cannot create topic t"):
        create_topic_once(lambda: admin, NewTopic("t", 1, 1), 5.0)  # type: ignore[arg-type,return-value]
    assert admin.asked == 3
