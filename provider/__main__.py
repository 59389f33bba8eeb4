"""The trainjobs component provider's entry point (the Pulumi CLI runs it as a plugin)."""

from pulumi.provider.experimental import component_provider_host

from trainjobs.deploy.provider import PACKAGE, VERSION, components

if __name__ == "__main__":
    component_provider_host(components(), PACKAGE, version=VERSION)
