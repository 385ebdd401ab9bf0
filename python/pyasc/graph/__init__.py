"""Programs of many operators: graph mode and the micro-batch pipeline.

Graph mode records calls, then fuses and runs them at once; the pipeline runs stages over
micro-batches. Neither is imported by a plain ``import pyasc``.
"""
