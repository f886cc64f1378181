"""The throwaway PostgreSQL cluster used by the test suite and benchmarks."""

from __future__ import annotations

import socket

import psycopg

from test_servers.postgres import PostgresCluster


def test_cluster_starts_serves_and_stops() -> None:
    cluster = PostgresCluster()
    with cluster:
        base_dir = cluster.base_dir
        assert base_dir is not None and base_dir.is_dir()
        assert cluster.dsn() == f"postgresql://postgres@127.0.0.1:{cluster.port}/postgres"

        with psycopg.connect(cluster.dsn()) as conn:
            version = conn.execute("select version()").fetchone()
            fsync = conn.execute("show fsync").fetchone()
        assert version is not None and version[0].startswith("PostgreSQL ")
        assert fsync == ("off",)

        cluster.create_database("copy_of_template1", template="template1")
        with psycopg.connect(cluster.dsn("copy_of_template1")) as conn:
            assert conn.execute("select current_database()").fetchone() == ("copy_of_template1",)
        cluster.drop_database("copy_of_template1")

    cluster.stop()  # idempotent
    assert not base_dir.exists()
    with socket.socket() as sock:
        sock.settimeout(2)
        assert sock.connect_ex(("127.0.0.1", cluster.port)) != 0, "server still listening"
