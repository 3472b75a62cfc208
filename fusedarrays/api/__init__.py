"""What users touch: the lazy ``fa.ndarray``, elementwise functions and operators from the op
table, the Array API namespace's pieces (creation, manipulation, data types, devices,
protocols, products, ``fa.special``), NumPy dispatch, display.
"""
