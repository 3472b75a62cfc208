"""The graph's data, pure: the op table, dtypes and promotion, graph nodes and their signatures,
layouts (broadcasting, strides, alignment, schedules' layout classes).
"""
