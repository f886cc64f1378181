"""Helpers of the API tests (no tests here): an application over a store with a read and an
admin token, and a client that sends them."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from ostinato.api import create_app
from ostinato.api.tokens import hash_secret, new_secret
from ostinato.config import Settings
from ostinato.domain.clock import Clock
from ostinato.store import Store


class Api:
    """A TestClient over ``create_app(store)`` with tokens ``reader`` (read), ``machine`` (worker) and ``admin``,
    their names prefixed by ``tokens`` (several apps over one store)."""

    def __init__(self, store: Store, clock: Clock, settings: Settings | None = None, *, tokens: str = "", **options: Any):
        self.store, self.clock = store, clock
        self.app = create_app(store, settings or Settings(), clock, **options)
        self.client = TestClient(self.app)
        self.secrets = {}
        for name, scope in (("reader", "read"), ("machine", "worker"), ("admin", "admin")):
            self.secrets[scope] = new_secret()
            store.create_api_token(tokens + name, scope, hash_secret(self.secrets[scope]), clock.now(), actor="tests")

    def headers(self, scope: str | None) -> dict[str, str]:
        return {} if scope is None else {"Authorization": f"Bearer {self.secrets[scope]}"}

    def get(self, path: str, *, scope: str | None = "read", **kwargs: Any):
        return self.client.get(path, headers=self.headers(scope), **kwargs)

    def post(self, path: str, body: Any = None, *, scope: str | None = "admin", **kwargs: Any):
        return self.client.post(path, json=body, headers=self.headers(scope), **kwargs)

    def send(self, method: str, path: str, body: Any = None, **kwargs: Any):
        """A GET with a read token, a POST, PATCH or DELETE with an admin token (unless ``scope`` says)."""
        if method == "GET":
            return self.get(path, **kwargs)
        if method == "POST":
            return self.post(path, body, **kwargs)
        scope = kwargs.pop("scope", "admin")
        return self.client.request(method, path, json=body, headers=self.headers(scope), **kwargs)

    def ok(self, method: str, path: str, body: Any = None, *, status: int = 200, **kwargs: Any) -> Any:
        response = self.send(method, path, body, **kwargs)
        assert response.status_code == status, (path, response.status_code, response.text)
        return response.json() if response.content else None

    def error(self, method: str, path: str, body: Any = None, *, status: int = 400, **kwargs: Any) -> dict[str, Any]:
        """The error of a request that must fail with ``status``."""
        response = self.send(method, path, body, **kwargs)
        assert response.status_code == status, (path, response.status_code, response.text)
        return response.json()["error"]

    def all_pages(self, path: str, limit: int, **params: Any) -> tuple[list[Any], int]:
        """Every item of a paged list, and how many pages it took."""
        items, after, pages = [], None, 0
        while True:
            query = {**params, "limit": limit, **({"after": after} if after is not None else {})}
            answer = self.ok("GET", path, params=query)
            items += answer["items"]
            pages += 1
            after = answer["next"]
            if after is None:
                return items, pages


def add_loader(api: Api, visit_type: str = "git") -> None:
    api.ok("POST", "/api/v1/task-types", {"type": f"load-{visit_type}", "backend_name": "ostinato.examples:load_directory",
                                          "description": f"Load {visit_type} origins", "default_interval": "1d"},
           status=201)
