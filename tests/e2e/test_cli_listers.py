"""A lister named on the command line is the one a person means: a bare NAME is the only
lister of that name, several are refused listing them as NAME/INSTANCE, and a new lister is
declared only with its instance (a typo creates nothing)."""

from __future__ import annotations

import json

import pytest
from cli_helpers import add_loaders, ok, ok_json, run

from ostinato.store import open_store

A = "https://github.com/turtl/mobile"


@pytest.fixture
def url(fresh_url):
    ok(fresh_url, "db", "init")
    add_loaders(fresh_url, "git")
    return fresh_url


def one_origin(url=A):
    return json.dumps({"url": url, "visit_type": "git"}) + "\n"


def listers(url):
    with open_store(url) as store:
        return sorted((item.name, item.instance_name) for item in store.list_listers())


def listed_by(url):
    with open_store(url) as store:
        names = {item.id: f"{item.name}/{item.instance_name}" for item in store.list_listers()}
        return sorted((o.origin.url, names[o.lister_id]) for o in store.get_listed_origins())


def test_a_bare_name_is_the_one_lister_of_that_name(url):
    ok(url, "lister", "add", "github", "main")
    out = ok(url, "origin", "record", "--lister", "github", "-", input=one_origin()).output
    assert out.strip() == "Recorded 1 origin for lister github/main (id 1)"
    assert listers(url) == [("github", "main")]  # no second lister github/github
    assert listed_by(url) == [(A, "github/main")]


def test_a_name_of_several_listers_is_refused_listing_them(url):
    ok(url, "lister", "add", "gitlab", "gitlab.com")
    ok(url, "lister", "add", "gitlab", "gitlab.inria.fr")
    result = run(url, "origin", "record", "--lister", "gitlab", "-", input=one_origin())
    assert result.exit_code == 2
    assert result.output.strip() == (
        "error: lister: expected one lister: gitlab is the name of several, say which as NAME/INSTANCE "
        "(gitlab/gitlab.com, gitlab/gitlab.inria.fr), got 'gitlab'")
    assert listed_by(url) == []
    ok(url, "origin", "record", "--lister", "gitlab/gitlab.inria.fr", "-", input=one_origin())
    ok(url, "origin", "record", "--lister", "gitlab", "--instance", "gitlab.com", "-", input=one_origin("https://b/c"))
    assert listed_by(url) == [("https://b/c", "gitlab/gitlab.com"), (A, "gitlab/gitlab.inria.fr")]
    for command in (["origin", "grab-next", "git", "--dry-run"], ["metrics", "show"]):
        result = run(url, *command, "--lister", "gitlab")
        assert result.exit_code == 2 and "(gitlab/gitlab.com, gitlab/gitlab.inria.fr)" in result.output, command


def test_an_unknown_bare_name_creates_nothing(url):
    ok(url, "lister", "add", "github", "main")
    result = run(url, "origin", "record", "--lister", "githbu", "-", input=one_origin())
    assert result.exit_code == 2
    assert result.output.startswith("error: lister: expected a known lister, NAME or NAME/INSTANCE (known: github/main); "
                                    "a new lister is declared with its instance: NAME/INSTANCE or --instance, got 'githbu'")
    assert listers(url) == [("github", "main")] and listed_by(url) == []


def test_a_new_lister_is_declared_with_its_instance_and_said_so(url):
    out = ok(url, "origin", "record", "--lister", "gitea/codeberg.org", "-", input=one_origin()).output
    assert out.splitlines()[0] == "Created lister gitea/codeberg.org (id 1)"
    data = ok_json(url, "origin", "record", "--lister", "gitea", "-", input=one_origin())
    assert data["lister_created"] is False and data["lister"]["instance_name"] == "codeberg.org"
    assert listers(url) == [("gitea", "codeberg.org")]
    result = run(url, "origin", "record", "--lister", "gitea/x", "--instance", "y", "-", input=one_origin())
    assert result.exit_code == 2 and result.output.startswith("error: instance: expected either --lister NAME/INSTANCE or")


def test_grab_next_and_metrics_resolve_the_same_way(url):
    ok(url, "origin", "record", "--lister", "github/main", "-", input=one_origin())
    got = ok_json(url, "origin", "grab-next", "git", "--lister", "github", "--dry-run")
    assert [v["lister"] for v in got["visits"]] == ["github/main"]
    ok(url, "metrics", "update")
    assert [m["lister"] for m in ok_json(url, "metrics", "show", "--lister", "github")] == ["github/main"]
    result = run(url, "metrics", "show", "--lister", "github/other")
    assert result.exit_code == 2 and "known: github/main" in result.output


def test_a_lister_declared_by_mistake_is_deleted_and_one_that_lists_origins_is_kept(url):
    ok(url, "lister", "add", "githbu", "github.com")
    ok(url, "lister", "add", "github", "github.com")
    ok(url, "origin", "record", "--lister", "github/github.com", "-", input=one_origin())
    kept = run(url, "lister", "delete", "github")
    assert kept.exit_code != 0 and kept.output.count("\n") == 1 and "lists origins" in kept.output
    assert "Deleted lister" in ok(url, "lister", "delete", "githbu/github.com").output
    assert listers(url) == [("github", "github.com")]
    assert listed_by(url) == [(A, "github/github.com")]
