"""trainjobs Pulumi program: one component per job named by the stack's config."""

from components.deploy.program import run

run()
