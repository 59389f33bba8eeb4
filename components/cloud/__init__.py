"""Cloud capacity: GPU node pools on EKS and the checks that a job fits them.

:mod:`.instances` (GPU instance types), :mod:`.node_pool` (a pool's validated configuration),
:mod:`.device_plugin` (the NVIDIA device plugin DaemonSet), :mod:`.gpu_pool` (the pool as a
Pulumi component), :mod:`.scheduling` (the profile GPU pods need) and :mod:`.preflight` (AWS
checks before anything is created).
"""
