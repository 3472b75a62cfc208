"""Running plans: realize (evaluation's one launch path), launch records, the backend seam and
buffers, the disk cache, counters and timings, precompile.
"""
