"""PLM Explorer's model package.

Everything a tab computes lives here, as plain data (dataclasses, tensors, arrays, lists).
This package never imports gradio: the UI lives in ``demo/`` and only formats what core returns.
"""
