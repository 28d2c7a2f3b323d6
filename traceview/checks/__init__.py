"""Correctness checks: a float64 reference, isolated checking children, failure reports."""
