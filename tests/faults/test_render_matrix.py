"""The page generator: every recorded row lands in its area's table, pipes are escaped."""

from __future__ import annotations

from tests.faults.render_matrix import render


def test_render_puts_rows_in_their_area_tables() -> None:
    page = render({"meta": {"generated": "now", "suite_seconds": 1, "cpus": 2,
                            "python": "3.11", "exit_status": 0},
                   "rows": [{"area": "Kafka", "fault": "f|1", "injection": "i", "during": "d",
                             "after": "a", "recovery": "1 cycle", "passed": True},
                            {"area": "Burrow", "fault": "f2", "injection": "i2",
                             "during": "d2", "after": "a2", "recovery": "", "passed": False}]})
    assert page.index("## Burrow") < page.index("## Kafka")
    assert "| **f\\|1** | i | d | a | 1 cycle | pass |" in page
    assert "**FAIL**" in page
    assert "## Security options" in page
