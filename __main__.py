"""trainjobs Pulumi program: one component per job named by the stack's config."""

from trainjobs.deploy.program import run

run()
