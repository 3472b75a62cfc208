"""Pure stages from a graph to kernel source: the planner (a graph cut into kernel plans), the
code generator, the device helper library, cache keys.
"""
