"""trainjobs-infra: GPU node pools on an existing EKS cluster; exports their scheduling profiles.

Job stacks copy a profile into their `trainjobs:gpuPool` config, e.g.
`pulumi config set trainjobs:gpuPool "$(pulumi -C infra stack output schedulingProfiles
--stack gpu-a100 --json | jq -c .a100)"`.
"""

from components.gpu_pool import pools_from_config

pools_from_config()
