"""Managed platforms beside ECS: ACK, PAI-EAS and Function Compute plans from the same estimate, and their data."""
