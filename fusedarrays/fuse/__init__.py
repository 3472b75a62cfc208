"""``@fa.fuse``: tracing a function into kernel stores, foreach over lists of tensors, argument
classification and the generated argument packers of a traced signature.
"""
