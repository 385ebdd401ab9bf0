"""Network layers built on library kernels.

Attention, convolution and pooling, and detection post-processing (box IoU, NMS, row filtering).
"""
