"""Harnesses that break things on purpose and the measures of failover: the chaos harness (faults, failover, its checks) and the replica's lag behind a streaming standby."""
