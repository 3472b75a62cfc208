"""What users touch: the lazy ``fa.ndarray``, elementwise functions and operators from the op
table, creation and view functions, NumPy dispatch, display.
"""
