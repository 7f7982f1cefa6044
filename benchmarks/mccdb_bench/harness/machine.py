"""Describe the machine a measurement ran on, for docs/results."""
import os
import platform


def describe() -> str:
    """CPU model, vCPU count and kernel, e.g. 'AMD EPYC, 2 vCPUs, Linux 6.1.0'."""
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), "?")
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} vCPUs, Linux {platform.release()}"
