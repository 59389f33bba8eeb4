"""The shared core every job kind builds on.

The resource graph (:mod:`.graph`), deterministic names (:mod:`.names`), labels
(:mod:`.labels`), user errors (:mod:`.errors`), spec-model base (:mod:`.models`), pod-template
checks (:mod:`.pod_template`), spec files in (:mod:`.documents`) and manifests out
(:mod:`.manifests`), durations (:mod:`.durations`), job phases (:mod:`.phases`), and the
replica machinery TFJob and PyTorchJob share (:mod:`.replica_spec`, :mod:`.replica_graph`).
"""
