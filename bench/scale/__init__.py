"""Benchmarks past one server: the services' loop times under load, and the journal client alone and as a consumer group."""
