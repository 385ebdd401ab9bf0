"""Devices and what runs on them.

``DeviceArray`` and streams, the NPU twin and its cost model, monitoring, and the host machine's
measured roofs.
"""
