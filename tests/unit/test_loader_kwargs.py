"""What a loader is called with for a grabbed origin: swh-scheduler's keywords, in its order
(docs/reference/swh-compat-celery.md); the e2e comparison with the peer is tests/e2e/test_swh_compat_celery.py."""

from __future__ import annotations

from ostinato.domain.visit_policies import NextVisit, VisitPolicy


def visit(extra: dict, instance: str | None = "gitlab.example.org") -> NextVisit:
    return NextVisit("https://gitlab.example.org/a/b", "git", VisitPolicy.NEVER_VISITED_OLDEST_UPDATE_FIRST, 1,
                     "gitlab", instance, extra)


def test_url_and_lister_fields_come_first_then_the_extra_arguments_in_their_order():
    kwargs = visit({"ref": "main", "artifacts": [{"version": "1.0"}]}).loader_kwargs()
    assert list(kwargs.items()) == [("url", "https://gitlab.example.org/a/b"), ("lister_name", "gitlab"),
                                    ("lister_instance_name", "gitlab.example.org"), ("ref", "main"),
                                    ("artifacts", [{"version": "1.0"}])]


def test_a_lister_without_an_instance_name_gives_null():
    assert visit({}, instance="").loader_kwargs()["lister_instance_name"] is None
    assert visit({}, instance=None).loader_kwargs()["lister_instance_name"] is None


def test_extra_arguments_never_replace_the_url_or_the_lister():
    kwargs = visit({"url": "https://elsewhere.example/x", "lister_name": "other", "depth": 1}).loader_kwargs()
    assert kwargs == {"url": "https://gitlab.example.org/a/b", "lister_name": "gitlab",
                      "lister_instance_name": "gitlab.example.org", "depth": 1}
