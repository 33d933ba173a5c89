"""How hard each benchmark works: the full run, or a quick one for checking that it all works."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    quick: bool
    # Each timed repeat runs the measured call until at least this many seconds pass.
    min_repeat_seconds: float
    repeats: int
    subprocess_repeats: int
    batch_bundles: int
    batch_repeats: int
    compile_sizes: tuple[int, ...]
    # --baseline-admiss: another checkout's `admiss` command, timed beside this one's.
    baseline_admiss: str | None = None
    # --ray-sizes: the bundle counts the ray section compares at.
    ray_sizes: tuple[int, ...] = (100_000, 1_000_000, 5_000_000)


def settings_for(quick: bool) -> Settings:
    """The settings of a full run, or of a quick one."""
    if quick:
        return Settings(True, 0.05, 3, 3, 10_000, 2, (1_000, 10_000), ray_sizes=(10_000, 100_000))
    return Settings(False, 0.2, 7, 10, 100_000, 3, (1_000, 10_000))
