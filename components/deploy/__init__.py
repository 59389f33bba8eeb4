"""The Pulumi side: what `pulumi up` deploys.

:mod:`.program` (behind ``__main__.py``: stack settings in, components out), :mod:`.component`
(a job as a ComponentResource of pulumi-kubernetes resources) and :mod:`.completion` (the
dynamic resource that watches a job to its end through :mod:`trainjobs.cluster`).
"""
