"""Helpers for tests and benchmarks: throwaway services and fixtures, never used in production."""
