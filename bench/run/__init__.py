"""Running the matrix: one run per (fixture, preset, ctx, rep), one results row each, progress on the way."""
