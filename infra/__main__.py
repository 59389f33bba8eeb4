"""trainjobs-infra: GPU node pools on an existing EKS cluster, and the CUDA images jobs run.

Exports the pools' scheduling profiles and the images' digest-pinned references (`images`).

Job stacks copy a profile into their `trainjobs:gpuPool` config, e.g.
`pulumi config set trainjobs:gpuPool "$(pulumi -C infra stack output schedulingProfiles
--stack gpu-a100 --json | jq -c .a100)"`.
"""

from trainjobs.cloud.gpu_pool import pools_from_config
from trainjobs.images.cuda_image import images_from_config

pools_from_config()
images_from_config()
