"""Faces of Ostinato towards other schedulers: reading their databases, speaking their protocols."""
