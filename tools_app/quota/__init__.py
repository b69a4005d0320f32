"""Per-workspace disk quotas: what a workspace holds, and the guard around writing calls."""
