"""Listed origins are read strictly: every bad field is named."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ostinato.domain.errors import ValidationError
from ostinato.domain.origins import ListedOrigin, parse_listed_origin


def test_a_full_record():
    origin = parse_listed_origin({
        "url": "https://github.com/a/b", "visit_type": "git", "extra_loader_arguments": {"branch": "main"},
        "last_update": "2026-01-01T00:00:00Z", "enabled": True, "is_fork": True, "forked_from_url": "https://github.com/c/b",
    })
    assert origin == ListedOrigin("https://github.com/a/b", "git", {"branch": "main"}, datetime(2026, 1, 1, tzinfo=UTC),
                                  True, True, "https://github.com/c/b")


def test_a_minimal_record_gets_defaults():
    assert parse_listed_origin({"url": "https://pypi.org/project/x", "visit_type": "pypi"}) == ListedOrigin(
        "https://pypi.org/project/x", "pypi")


@pytest.mark.parametrize("change, field", [
    ({"url": ""}, "url"),
    ({"url": None}, "url"),
    ({"visit_type": 3}, "visit_type"),
    ({"extra_loader_arguments": [1]}, "extra_loader_arguments"),
    ({"last_update": "last week"}, "last_update"),
    ({"last_update": "2026-01-01T00:00:00"}, "last_update"),
    ({"last_update": 1767225600}, "last_update"),
    ({"enabled": "yes"}, "enabled"),
    ({"is_fork": 1}, "is_fork"),
    ({"forked_from_url": ""}, "forked_from_url"),
    ({"stars": 10}, "stars"),
    ({"url": "https://github.com/\ud800"}, "url"),
    ({"extra_loader_arguments": {"branch": "\udc00"}}, "extra_loader_arguments"),
    ({"forked_from_url": "https://x/\ud800"}, "forked_from_url"),
])
def test_bad_fields_are_named(change, field):
    record = {"url": "https://github.com/a/b", "visit_type": "git", **change}
    with pytest.raises(ValidationError) as info:
        parse_listed_origin(record)
    assert info.value.field == field


def test_not_an_object():
    with pytest.raises(ValidationError) as info:
        parse_listed_origin("https://github.com/a/b")
    assert info.value.field == "record"
