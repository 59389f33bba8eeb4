"""trainjobs: distributed training jobs on Kubernetes as Pulumi infrastructure as code."""
